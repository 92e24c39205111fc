-- Gradients by ∂: the seed's two-layer network trained with automatic gradients, beside the
-- same network trained with the hand-written backpropagation of Prelude.Networks.
--
-- loss(x, y, w1, w2) = 1/(2n) ‖relu(X W1) W2 − Y‖², the loss Networks' gradients are of.

open Prelude.Networks

-- loss(x, y, w1, w2) · x inputs n×p · y targets n×q · w1 p×h · w2 h×q → scalar
-- The squared error of the two-layer network, halved and averaged over the rows.
def loss(x, y, w1, w2) ≔ einsum("ij->", (outputs(x, w1, w2) − y)²) / (2 · rows(x))

-- descent(t, r, x, y, w1, w2) · t steps · r rate · data and weights as loss → (w1, w2) after t steps
-- Full-batch gradient descent on both layers, each step's gradients by ∂.
def descent(t, r, x, y, w1, w2) ≔
  if t = 0 then (w1, w2)
  else let (g1, g2) ≔ ∂ loss(x, y, w1, w2) / ∂ (w1, w2) in descent(t − 1, r, x, y, w1 − r · g1, w2 − r · g2)

-- autoFit(t, r, x, y, w1, w2) · as descent → the trained network's outputs on x, n×q
-- mlpFit with automatic gradients.
fn autoFit(t, r, x, y, w1, w2) ↦ let (v1, v2) ≔ descent(t, r, x, y, w1, w2) in outputs(x, v1, v2)

-- handFit(t, r, x, y, w1, w2) · as autoFit → n×q
-- The seed's mlpFit, its gradients written by hand.
fn handFit(t, r, x, y, w1, w2) ↦ mlpFit(t, r, x, y, w1, w2)

-- autoStep(r, x, y, w1, w2) · one step by ∂ → (w1, w2)
fn autoStep(r, x, y, w1, w2) ↦ let (g1, g2) ≔ ∂ loss(x, y, w1, w2) / ∂ (w1, w2) in (w1 − r · g1, w2 − r · g2)

-- handStep(r, x, y, w1, w2) · one step by the hand-written gradients → (w1, w2)
fn handStep(r, x, y, w1, w2) ↦ (stepFirst(r, x, y, w1, w2), stepSecond(r, x, y, w1, w2))

-- gradients(x, y, w1, w2) · the loss's gradients with respect to both weights → (p×h, h×q)
fn gradients(x, y, w1, w2) ↦ ∂ loss(x, y, w1, w2) / ∂ (w1, w2)
