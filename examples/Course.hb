-- Course: the numbers of the course module on networks, backpropagation, optimisers and numerics
--
-- Each section below reproduces the numbers one section of the course seed printed
-- (/work/shared/seeds/002_aa602d91ed2d4b95.txt), in the seed's order: the tiny network's
-- gradients, the dual-number example, the activations' derivatives, the digits network, the
-- losses and their numerics, batch normalisation, the optimiser arithmetic and the schedule.
-- Every derivative is taken with ∂ and every optimiser step is the Prelude's, so a number
-- here is the language's answer, not a transcription. The circle classifier that ends the
-- seed is examples/CircleClassifier.hb; examples/course.py prints everything beside the
-- seed, and docs/course.md lists the numbers with notes.
--
-- The derivatives are written in ∂'s ASCII spelling, grad(e, x) for ∂ e / ∂ x: the printer
-- writes ∂ back as grad(…), which reads as a call, so a file using ∂ does not yet print and
-- parse back to the same tree (the test suite checks that every shipped file does).
--
-- Conventions. Batches are n×d matrices, one example per row (the seed's batch form);
-- weights are d_in×d_out and biases vectors d_out. All arithmetic is float64: where the seed's
-- number is a float32 effect (a NaN, an underflow, a variance of exactly 0), the notes in
-- docs/course.md say so and show what float64 gives.

open Prelude.Arithmetic
open Prelude.Statistics
open Prelude.Losses
open Prelude.Norms
open Prelude.Optimisers


-- The tiny network (seed section "The batch form, and the code")

-- tinyGradients(x, t, w1, b1, w2, b2) · x inputs n×d0 · t targets n×1 · w1 d0×d1 · b1 vector d1 · w2 d1×1 · b2 vector 1 → (∂L/∂w1, ∂L/∂b1, ∂L/∂w2, ∂L/∂b2)
-- The gradients of the two-layer ReLU network's mean squared error with respect to all four parameters, in one reverse sweep.
fn tinyGradients(x, t, w1, b1, w2, b2) ↦ grad(tinyLoss(x, t, w1, b1, w2, b2), (w1, b1, w2, b2))

-- tinyLoss(x, t, w1, b1, w2, b2) · arguments as tinyGradients → scalar
-- The mean over the batch of the squared error of relu(X W1 + b1) W2 + b2 against t (Lab 1's loss).
def tinyLoss(x, t, w1, b1, w2, b2) ≔ mse(affine(relu(affine(x, w1, b1)), w2, b2), t)

-- affine(h, w, b) · h n×p · w p×q · b vector q → n×q
-- One layer before its activation, H W + 1 bᵀ: the bias repeated down the batch.
def affine(h, w, b) ≔ let z ≔ einsum("np,pq->nq", h, w) in z + stacked(z, b)


-- Dual numbers (seed section on forward mode)

-- dualExample(x1, x2) · x1 x2 scalars, x1 > 0 → (f, ∂f/∂x1, ∂f/∂x2)
-- Baydin's example f = ln x1 + x1 x2 − sin x2 and both partial derivatives (here by reverse mode).
fn dualExample(x1, x2) ↦ (baydin(x1, x2), grad(baydin(x1, x2), x1), grad(baydin(x1, x2), x2))

-- baydin(x1, x2) · x1 x2 scalars → scalar
-- f(x1, x2) = ln x1 + x1 x2 − sin x2.
def baydin(x1, x2) ≔ ln(x1) + x1 · x2 − sin(x2)


-- Activations and their derivatives (seed section on activations)

-- activationSlopes(z) · z vector → (σ′(z), tanh′(z), relu′(z), gelu′(z), silu′(z)), each a vector like z
-- The derivative of each activation at every entry of z, as ∂ of the sum (the activations work entrywise, so that gradient is φ′(z)).
fn activationSlopes(z) ↦ (grad(total(sigmoid(z)), z), grad(total(tanh(z)), z), grad(total(relu(z)), z), grad(total(gelu(z)), z), grad(total(silu(z)), z))

-- geluMinimum(z) · z starting point scalar → (place of the minimum, gelu there, gelu′ there)
-- Forty gradient steps of rate 2 on gelu itself from z; gelu″ ≈ 0.43 at the minimum, so each step shrinks the distance about sevenfold.
fn geluMinimum(z) ↦ let low ≔ geluValley(40, 2, z) in (low, gelu(low), geluSlope(low))

-- siluMinimum(z) · z starting point scalar → (place of the minimum, silu there, silu′ there)
-- Forty gradient steps of rate 4 on silu itself from z (silu″ ≈ 0.22 at the minimum).
fn siluMinimum(z) ↦ let low ≔ siluValley(40, 4, z) in (low, silu(low), siluSlope(low))

-- tanhGap(z) · z vector → (largest |gelu − geluTanh| over z, the z where it is reached)
-- How far GELU's tanh approximation strays from the exact z Φ(z) on the points given; a tie goes to the first.
fn tanhGap(z) ↦ let gap ≔ abs(gelu(z) − geluTanh(z)) in (maximum(gap, 0), einsum("i,i->", argmax(gap, 0), z))

-- Building blocks

-- geluSlope(z) · z scalar → scalar
-- gelu′(z), by ∂.
def geluSlope(z) ≔ grad(gelu(z), z)

-- siluSlope(z) · z scalar → scalar
-- silu′(z), by ∂.
def siluSlope(z) ≔ grad(silu(z), z)

-- geluValley(t, r, z) · t steps · r rate · z start, scalars → scalar
-- t steps of gradient descent on gelu: z ← z − r gelu′(z).
def geluValley(t, r, z) ≔ if t = 0 then z else geluValley(t − 1, r, z − r · geluSlope(z))

-- siluValley(t, r, z) · t steps · r rate · z start, scalars → scalar
-- t steps of gradient descent on silu: z ← z − r silu′(z).
def siluValley(t, r, z) ≔ if t = 0 then z else siluValley(t − 1, r, z − r · siluSlope(z))


-- The digits network (seed section "The batch form")

-- DigitsNetwork(seed) · seed of the initial draws
-- The 64→128→128→10 ReLU network of the seed, He-initialised (standard deviation √(2/d_in)), biases at zero.
model DigitsNetwork(seed) : Learner {
  weight w1 : Tensor[64, 128]  from gaussian(seed) · sqrt(2 / 64)
  weight b1 : Tensor[128]      from 0
  weight w2 : Tensor[128, 128] from gaussian(seed) · sqrt(2 / 128)
  weight b2 : Tensor[128]      from 0
  weight w3 : Tensor[128, 10]  from gaussian(seed) · sqrt(2 / 128)
  weight b3 : Tensor[10]       from 0

  -- eval(x) · x batch n×64 → logits n×10
  -- The forward pass, with no activation on the logits.
  def eval(x) ≔ affine(relu(affine(relu(affine(x, w1, b1)), w2, b2)), w3, b3)
}


-- Losses and numerics (seed section on numerics)

-- softmaxByHand(z) · z logits n×k → n×k
-- e^z divided by its row sums with no shift: inf / inf = NaN once a logit passes about 709.78 (float64).
fn softmaxByHand(z) ↦ exp(z) / lifted(z, rowTotal(exp(z)))

-- softmaxStable(z) · z logits n×k → n×k
-- The Prelude's softmaxRows, which subtracts each row's maximum first.
fn softmaxStable(z) ↦ softmaxRows(z)

-- crossEntropyOf(z, labels) · z logits n×k · labels class numbers vector n → scalar
-- The Prelude's cross-entropy from logits, through the log-sum-exp identity.
fn crossEntropyOf(z, labels) ↦ crossEntropy(z, labels)

-- logOfSoftmax(z) · z logits n×k → n×k
-- The logarithm taken after the softmax, in two steps: −∞ wherever the softmax underflows to 0.
fn logOfSoftmax(z) ↦ ln(softmaxRows(z))

-- logSoftmaxOf(z) · z logits n×k → n×k
-- The Prelude's logSoftmax, z minus the row's log-sum-exp: finite wherever z is.
fn logSoftmaxOf(z) ↦ logSoftmax(z)

-- binaryCrossEntropyByHand(z, y) · z logits n×q · y targets n×q → scalar
-- A sigmoid followed by −[y ln p + (1 − y) ln(1 − p)]: 1 − p cancels catastrophically and is exactly 0 (so the loss inf) once σ(z) rounds to 1.
fn binaryCrossEntropyByHand(z, y) ↦ 0 − grandTotal(y · ln(sigmoid(z)) + (1 − y) · ln(1 − sigmoid(z))) / (rows(z) · columns(z))

-- binaryCrossEntropyOf(z, y) · z logits n×q · y targets n×q → scalar
-- The Prelude's binary cross-entropy from logits, max(z, 0) − z y + ln(1 + e^(−|z|)).
fn binaryCrossEntropyOf(z, y) ↦ binaryCrossEntropy(z, y)

-- huberAgainstSquare(r, delta) · r residuals, any shape · delta threshold scalar → (Huber cost, half the square), each shaped like r
-- The Prelude's Huber terms beside ½ r², the squared error they replace.
fn huberAgainstSquare(r, delta) ↦ (huberTerms(r, delta), r² / 2)

-- spreads(x) · x vector → (mean((x − μ)²), mean(x²) − μ²)
-- The population variance two ways: from the deviations, and from two nearly equal large numbers.
fn spreads(x) ↦ (mean(deviations(x)²), mean(x²) − mean(x)²)


-- Batch normalisation (seed section on normalisation)

-- batchNormStep(z, mean, var, m) · z batch n×d · mean running means vector d · var running variances vector d · m momentum scalar → (output n×d, new running means, new running variances)
-- One training-mode pass of a fresh batch-norm layer (gain 1, shift 0) and its running statistics.
fn batchNormStep(z, mean, var, m) ↦ (batchNorm(z, ones(mean), zeros(mean)), runningMean(mean, z, m), runningVar(var, z, m))

-- batchNormAfter(z, mean, var) · z batch n×d · mean running means vector d · var running variances vector d → n×d
-- Evaluation mode (gain 1, shift 0): standardised with the running statistics.
fn batchNormAfter(z, mean, var) ↦ batchNormEval(z, mean, var, ones(mean), zeros(mean))


-- Adam's arithmetic (seed section on adaptive methods)

-- correctionFactor(t, b1, b2) · t step numbers from 1, any shape · b1 b2 decay rates scalars → same shape as t
-- How much larger Adam's step is without bias correction, (1 − β1^t) / √(1 − β2^t).
fn correctionFactor(t, b1, b2) ↦ (1 − b1 ^ t) / sqrt(1 − b2 ^ t)

-- spike(g, b1, b2) · g the spike in units of the typical gradient · b1 b2 decay rates, scalars → (m, v, √v, the step in units of the usual one)
-- One Adam step (long after the start, so bias correction is 1) with the gradient g where m = v = 1 were settled.
fn spike(g, b1, b2) ↦ let (w, m, v) ≔ adam(0, 1, 1, g, settled, 1, b1, b2, 0) in (m, v, sqrt(v), 0 − w)

-- recoverySteps(g, b1, b2, within) · arguments as spike · within tolerance scalar, e.g. 0.1 → scalar
-- The Adam steps with the usual gradient 1 after the spike until √v is back within the tolerance of normal.
fn recoverySteps(g, b1, b2, within) ↦ let (w, m, v) ≔ adam(0, 1, 1, g, settled, 1, b1, b2, 0) in recovery(0, m, v, b1, b2, within)

-- Building blocks

-- settled · → scalar
-- A step number so late that β^t is 0 and Adam's bias correction is exactly 1.
def settled ≔ 1e6

-- recovery(n, m, v, b1, b2, within) · n steps so far · m v Adam's moments · the rest as recoverySteps, scalars → scalar
-- Adam steps with gradient 1, counted, until √v ≤ 1 + within.
def recovery(n, m, v, b1, b2, within) ≔
  if sqrt(v) ≤ 1 + within then n
  else let (w2, m2, v2) ≔ adam(0, m, v, 1, settled, 1, b1, b2, 0) in recovery(n + 1, m2, v2, b1, b2, within)


-- Momentum as a filter, and the stability limits (seed section on momentum)

-- momentumGain(t, mu, flip) · t steps · mu momentum · flip −1 for a gradient that changes sign every step, 1 for a constant one, scalars → scalar
-- |v| after t steps of the Prelude's momentum fed the gradient ±1: it tends to 1/(1 + μ) for flip −1 and 1/(1 − μ) for flip 1.
fn momentumGain(t, mu, flip) ↦ abs(filterRun(t, 0, 1, mu, flip))

-- descentTrajectory(t, theta, rate, curvature) · t steps · theta start · rate η · curvature λ, scalars → θ after t steps
-- Plain gradient descent (the Prelude's sgd) on f(θ) = λθ²/2, the gradient by ∂: stable while ηλ < 2.
fn descentTrajectory(t, theta, rate, curvature) ↦ descentRun(t, theta, rate, curvature)

-- heavyBallTrajectory(t, theta, rate, mu, curvature) · arguments as descentTrajectory · mu momentum scalar → θ after t steps
-- The Prelude's momentum on the same quadratic, from zero velocity: stable while ηλ < 2(1 + μ), 3.8 at μ = 0.9.
fn heavyBallTrajectory(t, theta, rate, mu, curvature) ↦ heavyBallRun(t, theta, 0, rate, mu, curvature)

-- nesterovTrajectory(t, theta, rate, mu, curvature) · arguments as heavyBallTrajectory → θ after t steps
-- The Prelude's Nesterov step on the same quadratic: stable while ηλ < 2(1 + μ)/(1 + 2μ), 1.36 at μ = 0.9.
fn nesterovTrajectory(t, theta, rate, mu, curvature) ↦ nesterovRun(t, theta, 0, rate, mu, curvature)

-- Building blocks

-- filterRun(t, v, g, mu, flip) · t steps · v velocity · g this step's gradient · mu · flip, scalars → velocity
-- t steps of v ← μ v + g, the gradient multiplied by flip after every step.
def filterRun(t, v, g, mu, flip) ≔
  if t = 0 then v
  else let (w2, v2) ≔ momentum(0, v, g, 1, mu) in filterRun(t − 1, v2, flip · g, mu, flip)

-- bowl(theta, curvature) · theta · curvature λ, scalars → scalar
-- The quadratic λθ²/2 whose curvature is λ.
def bowl(theta, curvature) ≔ curvature · theta² / 2

-- bowlSlope(theta, curvature) · as bowl → scalar
-- ∂ bowl / ∂ θ, which is λθ.
def bowlSlope(theta, curvature) ≔ grad(bowl(theta, curvature), theta)

-- descentRun(t, theta, rate, curvature) · as descentTrajectory → scalar
-- t steps of the Prelude's sgd on the bowl.
def descentRun(t, theta, rate, curvature) ≔
  if t = 0 then theta else descentRun(t − 1, sgd(theta, bowlSlope(theta, curvature), rate), rate, curvature)

-- heavyBallRun(t, theta, v, rate, mu, curvature) · v velocity · the rest as heavyBallTrajectory → scalar
-- t steps of the Prelude's momentum on the bowl.
def heavyBallRun(t, theta, v, rate, mu, curvature) ≔
  if t = 0 then theta
  else let (theta2, v2) ≔ momentum(theta, v, bowlSlope(theta, curvature), rate, mu) in heavyBallRun(t − 1, theta2, v2, rate, mu, curvature)

-- nesterovRun(t, theta, v, rate, mu, curvature) · as heavyBallRun → scalar
-- t steps of the Prelude's nesterov on the bowl.
def nesterovRun(t, theta, v, rate, mu, curvature) ≔
  if t = 0 then theta
  else let (theta2, v2) ≔ nesterov(theta, v, bowlSlope(theta, curvature), rate, mu) in nesterovRun(t − 1, theta2, v2, rate, mu, curvature)


-- The schedule (seed section on schedules)

-- courseSchedule(step) · step batches taken, scalar → learning rate scalar
-- The worked example's schedule: AdamW's 3e-3 reached over 500 warm-up steps from the factor 1e-3, then a cosine to 3e-5 at step 10,000.
fn courseSchedule(step) ↦ warmupCosine(step, 10000, 500, 3e-3, 3e-5, 1e-3)
