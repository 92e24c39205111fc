-- CircleClassifier: the training loop that ends the course seed, as a model
--
-- A 2→h→h→2 network with GELU between its layers tells points inside a circle from points
-- outside it. One call of train is one optimiser step of the seed's loop: the cross-entropy
-- of the logits, its gradient with respect to all six parameters by ∂ (spelled grad, as in
-- Course.hb), the gradient clipped to a global norm of 1 (clip_grad_norm_), and an AdamW
-- step (lr from a cosine over 400 epochs, weight decay 1e-2 on every parameter, as
-- torch.optim.AdamW(model.parameters()) does). Python walks the epochs and batches and calls
-- train once per batch; examples/course.py does, beside PyTorch.
--
-- Conventions. Inputs are n×2 batches, already standardised; labels are class numbers 0 or 1,
-- a vector n. Weights are d_in×d_out (PyTorch's nn.Linear stores the transpose) and biases
-- vectors. Adam's moments are weights of the model too (m and v per parameter, starting at
-- zero), and so is the count of steps taken, so a saved model resumes exactly.

open Prelude.Arithmetic
open Prelude.Losses
open Prelude.Norms
open Prelude.Optimisers
open Prelude.Statistics


-- CircleClassifier(hidden, seed) · hidden width of both hidden layers · seed of the initial draws
-- The seed's classifier, initialised like nn.Linear (uniform on ±1/√d_in for weights and biases) but from NumPy's generator.
model CircleClassifier(hidden, seed) : Learner {
  weight w1 : Tensor[2, hidden]      from (2 · uniform(seed) − 1) / sqrt(2)
  weight b1 : Tensor[hidden]         from (2 · uniform(seed) − 1) / sqrt(2)
  weight w2 : Tensor[hidden, hidden] from (2 · uniform(seed) − 1) / sqrt(hidden)
  weight b2 : Tensor[hidden]         from (2 · uniform(seed) − 1) / sqrt(hidden)
  weight w3 : Tensor[hidden, 2]      from (2 · uniform(seed) − 1) / sqrt(hidden)
  weight b3 : Tensor[2]              from (2 · uniform(seed) − 1) / sqrt(hidden)
  weight mw1 : Tensor[2, hidden]      from 0
  weight mb1 : Tensor[hidden]         from 0
  weight mw2 : Tensor[hidden, hidden] from 0
  weight mb2 : Tensor[hidden]         from 0
  weight mw3 : Tensor[hidden, 2]      from 0
  weight mb3 : Tensor[2]              from 0
  weight vw1 : Tensor[2, hidden]      from 0
  weight vb1 : Tensor[hidden]         from 0
  weight vw2 : Tensor[hidden, hidden] from 0
  weight vb2 : Tensor[hidden]         from 0
  weight vw3 : Tensor[hidden, 2]      from 0
  weight vb3 : Tensor[2]              from 0
  weight taken : Tensor[]             from 0

  -- train(x, labels, epoch) · x standardised batch n×2 · labels class numbers vector n · epoch epochs completed before this one, scalar
  -- One AdamW step on the clipped gradient of the batch's cross-entropy, at the learning rate the cosine schedule gives this epoch.
  def train(x, labels, epoch) {
    (w1, mw1, vw1) ≔ let (g1, c1, g2, c2, g3, c3) ≔ clippedGradients(x, labels) in adamW(w1, mw1, vw1, g1, taken + 1, rate(epoch), 0.9, 0.999, 1e-8, 0.01)
    (b1, mb1, vb1) ≔ let (g1, c1, g2, c2, g3, c3) ≔ clippedGradients(x, labels) in adamW(b1, mb1, vb1, c1, taken + 1, rate(epoch), 0.9, 0.999, 1e-8, 0.01)
    (w2, mw2, vw2) ≔ let (g1, c1, g2, c2, g3, c3) ≔ clippedGradients(x, labels) in adamW(w2, mw2, vw2, g2, taken + 1, rate(epoch), 0.9, 0.999, 1e-8, 0.01)
    (b2, mb2, vb2) ≔ let (g1, c1, g2, c2, g3, c3) ≔ clippedGradients(x, labels) in adamW(b2, mb2, vb2, c2, taken + 1, rate(epoch), 0.9, 0.999, 1e-8, 0.01)
    (w3, mw3, vw3) ≔ let (g1, c1, g2, c2, g3, c3) ≔ clippedGradients(x, labels) in adamW(w3, mw3, vw3, g3, taken + 1, rate(epoch), 0.9, 0.999, 1e-8, 0.01)
    (b3, mb3, vb3) ≔ let (g1, c1, g2, c2, g3, c3) ≔ clippedGradients(x, labels) in adamW(b3, mb3, vb3, c3, taken + 1, rate(epoch), 0.9, 0.999, 1e-8, 0.01)
    taken ≔ taken + 1
  }

  -- restart(u1, d1, u2, d2, u3, d3) · the six parameters, shaped as w1, b1, w2, b2, w3, b3
  -- Start again from the given parameters (PyTorch's initial weights, say) with a fresh optimiser: zero moments, no steps taken.
  def restart(u1, d1, u2, d2, u3, d3) {
    w1 ≔ u1
    b1 ≔ d1
    w2 ≔ u2
    b2 ≔ d2
    w3 ≔ u3
    b3 ≔ d3
    mw1 ≔ zeros(mw1)
    mb1 ≔ zeros(mb1)
    mw2 ≔ zeros(mw2)
    mb2 ≔ zeros(mb2)
    mw3 ≔ zeros(mw3)
    mb3 ≔ zeros(mb3)
    vw1 ≔ zeros(vw1)
    vb1 ≔ zeros(vb1)
    vw2 ≔ zeros(vw2)
    vb2 ≔ zeros(vb2)
    vw3 ≔ zeros(vw3)
    vb3 ≔ zeros(vb3)
    taken ≔ 0
  }

  -- logits(x) · x standardised batch n×2 → n×2
  -- The forward pass: two GELU layers, then the logits with no activation.
  def logits(x) ≔ affine(gelu(affine(gelu(affine(x, w1, b1)), w2, b2)), w3, b3)

  -- loss(x, labels) · as train, without the epoch → scalar
  -- The mean cross-entropy of the logits against the labels (F.cross_entropy): the Prelude's crossEntropy, with the one-hot targets built by targetsOf.
  def loss(x, labels) ≔ softCrossEntropy(logits(x), targetsOf(logits(x), labels))

  -- accuracyOn(x, labels) · as loss → scalar
  -- The share of rows whose larger logit is the label.
  def accuracyOn(x, labels) ≔ accuracy(logits(x), labels)

  -- gradients(x, labels) · as loss → the six gradients, shaped as w1, b1, w2, b2, w3, b3
  -- ∂ loss with respect to every parameter, in one reverse sweep.
  def gradients(x, labels) ≔ grad(loss(x, labels), (w1, b1, w2, b2, w3, b3))

  -- clippedGradients(x, labels) · as loss → the six gradients, clipped
  -- The gradients scaled together so that their global norm is at most 1, as clip_grad_norm_(…, 1.0).
  def clippedGradients(x, labels) ≔
    let (g1, c1, g2, c2, g3, c3) ≔ gradients(x, labels),
        s ≔ clipScale(sqrt(squares(g1) + vectorSquares(c1) + squares(g2) + vectorSquares(c2) + squares(g3) + vectorSquares(c3)), 1)
    in (s · g1, s · c1, s · g2, s · c2, s · g3, s · c3)
}

-- Building blocks

-- rate(epoch) · epoch epochs completed, scalar → learning rate scalar
-- CosineAnnealingLR(T_max = 400) stepped once per epoch from AdamW's 3e-3 down to 0.
def rate(epoch) ≔ cosineRate(epoch, 400, 3e-3, 0)

-- targetsOf(z, labels) · z logits n×k (only its shape is read) · labels class numbers vector n → one-hot rows n×k
-- The same rows as oneHot(labels, columns(z)), built by comparing each label with the column numbers: the numba executor
-- cannot yet compile a gradient that reads oneHot beside a row maximum (crossEntropy's), so the loss avoids it.
def targetsOf(z, labels) ≔ lifted(z, labels) = stacked(z, positions(z, 1))

-- affine(h, w, b) · h n×p · w p×q · b vector q → n×q
-- One layer before its activation, H W + 1 bᵀ.
def affine(h, w, b) ≔ let z ≔ einsum("np,pq->nq", h, w) in z + stacked(z, b)

-- trainingStatistics(x) · x training inputs n×d → (column means vector d, column standard deviations vector d)
-- The statistics the seed standardises with: means and sample standard deviations (n − 1, as Tensor.std) of the training set.
fn trainingStatistics(x) ↦ (columnMean(x), sqrt(columnVariance(x)))

-- standardise(x, mu, sd) · x inputs n×d · mu means vector d · sd standard deviations vector d → n×d
-- Each column moved by its training mean and divided by its training standard deviation.
fn standardise(x, mu, sd) ↦ (x − stacked(x, mu)) / stacked(x, sd)
