-- Losses
--
-- What a network is trained to make small, each written so that it never overflows: the
-- cross-entropy from logits through the log-sum-exp identity, ln Σ_j e^(z_j) = m + ln Σ_j
-- e^(z_j − m) with m the row's maximum, and the binary cross-entropy from logits as
-- max(z, 0) − z y + ln(1 + e^(−|z|)). Every loss is the mean over the batch, so a gradient
-- keeps its scale whatever the batch size; differentiate one with ∂ loss / ∂ w.
--
-- Conventions. Logits z are n×k, one row of k class scores per sample, read as log-odds and
-- never passed through a softmax first. The …Last and masked definitions take logits of any
-- rank, …×k, the class scores along the last axis (a batch of sequences B×L×k, say), with
-- labels and 0/1 masks shaped as the leading axes; the masked ones average over the rows
-- whose mask is 1. Class labels are whole numbers 0 … k−1, one per row
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


-- Any rank: logits …×k, class scores along the last axis for any leading axes (a batch, a batch
-- of sequences B×L, …), labels shaped as the leading axes

-- logSoftmaxLast(z) · z logits …×k, any rank ≥ 1 → log-probabilities …×k
-- Each row's logits (along the last axis) minus their log-sum-exp, shifted by the row's maximum so nothing overflows.
def logSoftmaxLast(z) ≔
  let s ≔ z − spreadLast(lastMaximum(z), z)
  in s − spreadLast(ln(einsum("...v->...", exp(s))), z)

-- crossEntropyLast(z, labels) · z logits …×k · labels class numbers 0 … k−1, shaped as z's leading axes → mean loss scalar
-- The softmax cross-entropy of every row against its label, averaged over all rows (crossEntropy for any leading axes).
def crossEntropyLast(z, labels) ≔ softCrossEntropyLast(z, oneHot(labels, classCount(z)))

-- softCrossEntropyLast(z, y) · z logits …×k · y target shares …×k (one-hot or smoothed) → mean loss scalar
-- −(1/N) Σ y ln softmax(z) over the N rows of z.
def softCrossEntropyLast(z, y) ≔ 0 − einsum("...v,...v->", y, logSoftmaxLast(z)) · classCount(z) / einsum("...v->", z ^ 0)

-- maskedCrossEntropy(z, labels, mask) · z logits …×k · labels class numbers, shaped as z's leading axes · mask 0/1, shaped as labels → mean loss over the rows kept, scalar
-- The cross-entropy averaged over the rows whose mask is 1 only (padding, mask 0, counts for nothing), as torch's ignore_index.
def maskedCrossEntropy(z, labels, mask) ≔ 0 − einsum("...,...v,...v->", mask, oneHot(labels, classCount(z)), logSoftmaxLast(z)) / einsum("...->", mask)

-- smoothedLabelsLast(labels, z, alpha) · labels class numbers, shaped as z's leading axes · z logits …×k (only its shape is read) · alpha smoothing scalar in [0, 1] → target shares …×k
-- Label smoothing for any leading axes: (1 − α) one-hot + α/k.
def smoothedLabelsLast(labels, z, alpha) ≔ (1 − alpha) · oneHot(labels, classCount(z)) + alpha / classCount(z)

-- accuracyLast(z, labels) · z logits …×k · labels class numbers, shaped as z's leading axes → share of rows whose largest logit is the label, scalar
-- accuracy for any leading axes (a tie goes to the first largest logit).
def accuracyLast(z, labels) ≔ einsum("...v,...v->", lastArgmax(z), oneHot(labels, classCount(z))) / einsum("...->", labels ^ 0)

-- maskedAccuracy(z, labels, mask) · as maskedCrossEntropy → share of the kept rows predicted right, scalar
-- accuracyLast over the rows whose mask is 1.
def maskedAccuracy(z, labels, mask) ≔ einsum("...,...v,...v->", mask, lastArgmax(z), oneHot(labels, classCount(z))) / einsum("...->", mask)

-- Building blocks (the last axis moved first, where maximum and argmax reach it for any rank)

-- lastMaximum(z) · z …×k → the largest entry of each row, shaped as z's leading axes
def lastMaximum(z) ≔ maximum(einsum("...v->v...", z), 0)

-- lastArgmax(z) · z …×k → 0/1 …×k marking each row's first largest entry
def lastArgmax(z) ≔ einsum("v...->...v", argmax(einsum("...v->v...", z), 0))

-- classCount(z) · z …×k → k, the size of the last axis, scalar
def classCount(z) ≔ rows(einsum("...v->v...", z))

-- spreadLast(v, z) · v shaped as z's leading axes · z …×k → …×k, v repeated along the last axis
def spreadLast(v, z) ≔ einsum("...,...v->...v", v, z ^ 0)


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
