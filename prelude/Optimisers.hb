-- Optimisers
--
-- One step of each common optimiser, as a formula from the weights, the optimiser's own state
-- and the gradient g (usually ∂ loss / ∂ w), answering the new weights and the new state
-- together as a tuple; and the learning-rate schedules and gradient clipping around them.
-- A model's train block takes a step apart into its weights:
--
--   (w, v) ≔ momentum(w, v, ∂ loss(x, y) / ∂ w, 0.05, 0.9)
--
-- Conventions. Each definition works entrywise on a weight of any shape, with state of the
-- same shape (start it at zeros). The step number t of Adam counts from 1 at the first step.
-- The forms are PyTorch's: momentum keeps no (1 − μ) factor (dampening 0), Nesterov uses the
-- rewrite that evaluates the gradient at the stored weights, Adam's ε is added after the
-- square root, and AdamW shrinks the weights by r·λ before the Adam step.

open Prelude.Arithmetic


-- Steps

-- sgd(w, g, r) · w weights, any shape · g gradient, same shape · r learning rate scalar → new weights
-- Plain gradient descent, w − r g.
def sgd(w, g, r) ≔ w − r · g

-- momentum(w, v, g, r, mu) · w weights · v velocity, same shape · g gradient · r learning rate scalar · mu momentum scalar → (new weights, new velocity)
-- Heavy-ball momentum: v ← μ v + g, w ← w − r v.
def momentum(w, v, g, r, mu) ≔ let v2 ≔ mu · v + g in (w − r · v2, v2)

-- nesterov(w, v, g, r, mu) · arguments as momentum → (new weights, new velocity)
-- Nesterov momentum in PyTorch's form: v ← μ v + g, w ← w − r (g + μ v).
def nesterov(w, v, g, r, mu) ≔ let v2 ≔ mu · v + g in (w − r · (g + mu · v2), v2)

-- adam(w, m, v, g, t, r, b1, b2, eps) · w weights · m first moment · v second moment, same shapes · g gradient · t step number from 1 scalar · r learning rate · b1 b2 decay rates · eps scalars → (new weights, new m, new v)
-- Adam with bias correction: m ← β1 m + (1 − β1) g, v ← β2 v + (1 − β2) g², w ← w − r/(1 − β1^t) · m / (√v / √(1 − β2^t) + ε).
def adam(w, m, v, g, t, r, b1, b2, eps) ≔
  let m2 ≔ b1 · m + (1 − b1) · g,
      v2 ≔ b2 · v + (1 − b2) · g²
  in (w − r / (1 − b1 ^ t) · m2 / (sqrt(v2) / sqrt(1 − b2 ^ t) + eps), m2, v2)

-- adamW(w, m, v, g, t, r, b1, b2, eps, decay) · arguments as adam · decay weight decay λ scalar → (new weights, new m, new v)
-- Adam with decoupled weight decay: the weights shrink by the factor 1 − r λ, then take the Adam step.
def adamW(w, m, v, g, t, r, b1, b2, eps, decay) ≔ adam(w − r · decay · w, m, v, g, t, r, b1, b2, eps)


-- Clipping

-- clipScale(norm, c) · norm the global gradient norm scalar · c largest norm allowed scalar → factor in (0, 1] scalar
-- The factor every gradient is multiplied by to clip the global norm to c, min(1, c / (norm + 1e-6)), as PyTorch's clip_grad_norm_.
def clipScale(norm, c) ≔ min(1, c / (norm + 1e-6))

-- squares(w) · w matrix n×p → scalar
-- The sum of the squared entries, Σ_ij w_ij²; add those of every weight and take the square root for the global norm.
def squares(w) ≔ einsum("ij,ij->", w, w)

-- vectorSquares(b) · b vector n → scalar
-- The sum of the squared entries of a vector, Σ_i b_i².
def vectorSquares(b) ≔ einsum("i,i->", b, b)


-- Schedules

-- cosineRate(step, total, peak, low) · step steps taken scalar · total steps of the schedule scalar · peak rate at the start · low rate at the end → learning rate scalar
-- Half a cosine from peak down to low over total steps, low + (peak − low)(1 + cos(π step / total))/2.
def cosineRate(step, total, peak, low) ≔ low + (peak − low) · (1 + cos(3.141592653589793 · step / total)) / 2

-- warmupCosine(step, total, warm, peak, low, start) · step steps taken · total steps in all · warm warm-up steps · peak · low · start factor at step 0 (e.g. 1e-3), all scalars → learning rate scalar
-- A linear ramp from start·peak to peak over the first warm steps, then cosineRate over the remaining total − warm.
def warmupCosine(step, total, warm, peak, low, start) ≔
  if step < warm then peak · (start + (1 − start) · step / warm)
  else cosineRate(step − warm, total − warm, peak, low)
