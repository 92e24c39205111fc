-- Losses
--
-- What a network is trained to make small, each written so that it never overflows: the
-- cross-entropy from logits through the log-sum-exp identity, ln Σ_j e^(z_j) = m + ln Σ_j
-- e^(z_j − m) with m the row's maximum, and the binary cross-entropy from logits as
-- max(z, 0) − z y + ln(1 + e^(−|z|)). Every loss is the mean over the batch, so a gradient
-- keeps its scale whatever the batch size; differentiate one with ∂ loss / ∂ w.
--
-- Conventions. Logits z are n×k, one row of k class scores per sample, read as log-odds and
-- never passed through a softmax first; for sequences they are B×L×k, one row per position
-- (the sequence… definitions), with labels B×L. A mask is 0/1, one entry per row (position):
-- the masked losses average over the entries whose mask is 1. Class labels are whole numbers 0 … k−1, one per row
-- (a vector n); target shares y are n×k rows that sum to one. Predictions and targets of the
-- regression losses are n×q. softmaxRows and logSumExpRows come from Prelude.Arithmetic.

open Prelude.Arithmetic


-- Classification

-- logSoftmax(z) · z logits n×k → log-probabilities n×k
-- Each row's logits minus the row's log-sum-exp, z_ij − ln Σ_j' e^(z_ij'): finite even where the softmax underflows to 0.
def logSoftmax(z) ≔ z − lifted(z, logSumExpRows(z))

-- crossEntropy(z, labels) · z logits n×k · labels class numbers 0 … k−1, vector n → mean loss scalar
-- The softmax cross-entropy from logits and integer labels, (1/n) Σ_i (ln Σ_j e^(z_ij) − z_i,label_i).
def crossEntropy(z, labels) ≔ softCrossEntropy(z, oneHot(labels, columns(z)))

-- softCrossEntropy(z, y) · z logits n×k · y target shares n×k, rows summing to one → mean loss scalar
-- The cross-entropy against soft (or one-hot) targets, −(1/n) Σ_ij y_ij ln softmax(z)_ij.
def softCrossEntropy(z, y) ≔ 0 − einsum("ij,ij->", y, logSoftmax(z)) / rows(z)

-- smoothedLabels(labels, z, alpha) · labels class numbers vector n · z logits n×k (only its shape is read) · alpha smoothing scalar in [0, 1] → target shares n×k
-- Label smoothing: the one-hot targets moved towards uniform, (1 − α) y + α/k.
def smoothedLabels(labels, z, alpha) ≔ (1 − alpha) · oneHot(labels, columns(z)) + alpha / columns(z)

-- accuracy(z, labels) · z logits n×k · labels class numbers vector n → share of rows whose largest logit is the label, scalar
-- The fraction of correct predictions; a tie goes to the first largest logit, as argmax does.
def accuracy(z, labels) ≔ einsum("ij,ij->", argmax(z, 1), oneHot(labels, columns(z))) / rows(z)


-- maskedCrossEntropy(z, labels, mask) · z logits n×k · labels class numbers vector n · mask 0/1 vector n → mean loss over the rows kept, scalar
-- The cross-entropy averaged over the rows whose mask is 1 only (padding rows, mask 0, count for nothing).
def maskedCrossEntropy(z, labels, mask) ≔ 0 − einsum("i,ij,ij->", mask, oneHot(labels, columns(z)), logSoftmax(z)) / einsum("i->", mask)

-- maskedAccuracy(z, labels, mask) · as maskedCrossEntropy → share of the kept rows predicted right, scalar
-- accuracy over the rows whose mask is 1.
def maskedAccuracy(z, labels, mask) ≔ einsum("i,ij,ij->", mask, argmax(z, 1), oneHot(labels, columns(z))) / einsum("i->", mask)


-- Sequences: logits B×L×k, one row of class scores per position

-- sequenceLogSoftmax(z) · z logits B×L×k → log-probabilities B×L×k
-- Each position's logits minus their log-sum-exp over the last axis, shifted by the position's maximum so nothing overflows.
def sequenceLogSoftmax(z) ≔
  let s ≔ z − einsum("bt,btv->btv", maximum(z, 2), z ^ 0)
  in s − einsum("bt,btv->btv", ln(einsum("btv->bt", exp(s))), z ^ 0)

-- sequenceCrossEntropy(z, labels) · z logits B×L×k · labels class numbers 0 … k−1, B×L → mean loss scalar
-- The softmax cross-entropy of every position against its label, averaged over all B·L positions.
def sequenceCrossEntropy(z, labels) ≔ softSequenceCrossEntropy(z, oneHot(labels, columns(z[0])))

-- softSequenceCrossEntropy(z, y) · z logits B×L×k · y target shares B×L×k (one-hot or smoothed) → mean loss scalar
-- −(1/BL) Σ_btv y_btv ln softmax(z)_btv.
def softSequenceCrossEntropy(z, y) ≔ 0 − einsum("btv,btv->", y, sequenceLogSoftmax(z)) / (rows(z) · rows(z[0]))

-- maskedSequenceCrossEntropy(z, labels, mask) · z logits B×L×k · labels B×L · mask 0/1 B×L → mean loss over the positions kept, scalar
-- The cross-entropy averaged over the positions whose mask is 1 (padding, mask 0, counts for nothing).
def maskedSequenceCrossEntropy(z, labels, mask) ≔ 0 − einsum("bt,btv,btv->", mask, oneHot(labels, columns(z[0])), sequenceLogSoftmax(z)) / einsum("bt->", mask)

-- smoothedSequenceLabels(labels, z, alpha) · labels B×L · z logits B×L×k (only its shape is read) · alpha smoothing scalar in [0, 1] → target shares B×L×k
-- Label smoothing at every position: (1 − α) one-hot + α/k.
def smoothedSequenceLabels(labels, z, alpha) ≔ (1 − alpha) · oneHot(labels, columns(z[0])) + alpha / columns(z[0])

-- sequenceAccuracy(z, labels, mask) · z logits B×L×k · labels B×L · mask 0/1 B×L (all ones for every position) → share of the kept positions predicted right, scalar
-- A position is right when its largest logit (the first, on a tie) is its label.
def sequenceAccuracy(z, labels, mask) ≔ einsum("bt,btv,btv->", mask, argmax(z, 2), oneHot(labels, columns(z[0]))) / einsum("bt->", mask)


-- Two classes

-- binaryTerms(z, y) · z logits, any shape · y targets in [0, 1], same shape → loss per entry, same shape
-- The binary cross-entropy of each logit, max(z, 0) − z y + ln(1 + e^(−|z|)), exact and never overflowing.
def binaryTerms(z, y) ≔ relu(z) − z · y + ln(1 + exp(0 − abs(z)))

-- binaryCrossEntropy(z, y) · z logits n×q · y targets in [0, 1] n×q → mean loss scalar
-- The mean of binaryTerms over every entry, binary cross-entropy with logits.
def binaryCrossEntropy(z, y) ≔ einsum("ij->", binaryTerms(z, y)) / (rows(z) · columns(z))


-- Regression

-- mse(p, y) · p predictions n×q · y targets n×q → mean squared error scalar
-- The mean over every entry of (p − y)².
def mse(p, y) ≔ einsum("ij->", (p − y)²) / (rows(p) · columns(p))

-- huberTerms(r, delta) · r residuals, any shape · delta threshold scalar > 0 → loss per entry, same shape
-- ½ r² where |r| ≤ δ, and δ(|r| − δ/2) beyond: squared near zero, absolute far out.
def huberTerms(r, delta) ≔ let a ≔ abs(r), inner ≔ min(a, delta) in inner · (a − inner / 2)

-- huber(p, y, delta) · p predictions n×q · y targets n×q · delta threshold scalar → mean loss scalar
-- The mean Huber loss of the residuals p − y, whose gradient is clipped at ±δ.
def huber(p, y, delta) ≔ einsum("ij->", huberTerms(p − y, delta)) / (rows(p) · columns(p))

-- absoluteError(p, y) · p predictions n×q · y targets n×q → mean absolute error scalar
-- The mean over every entry of |p − y|.
def absoluteError(p, y) ≔ einsum("ij->", abs(p − y)) / (rows(p) · columns(p))
