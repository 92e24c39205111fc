-- Norms
--
-- Normalisation layers and the smooth activations that go with them. Batch normalisation
-- standardises each feature over the batch and keeps running statistics for evaluation;
-- layer normalisation and RMSNorm standardise each sample over its features, the same in
-- training and evaluation. GELU and SiLU are the smooth rectifiers of modern networks.
--
-- Conventions. A batch z is n×d, one row per sample. Gains and shifts are vectors d, one per
-- feature (a gain of ones and a shift of zeros leave the standardised values as they are).
-- The variance inside a normalisation is the population variance (dividing by n, or by d),
-- with 1e-5 added before the square root; the running variance of batch normalisation is fed
-- the sample variance (dividing by n − 1), as PyTorch does. The momentum m of a running
-- statistic is the weight of the new batch (0.1 in PyTorch), the opposite of an optimiser's.

open Prelude.Arithmetic
open Prelude.Statistics


-- Batch normalisation

-- batchNorm(z, gain, shift) · z batch n×d · gain vector d · shift vector d → n×d
-- Training mode: each column standardised with the batch's own mean and population variance, then scaled by gain and moved by shift.
def batchNorm(z, gain, shift) ≔ stacked(z, gain) · columnCentred(z) / stacked(z, sqrt(batchVar(z) + 1e-5)) + stacked(z, shift)

-- batchNormEval(z, mean, var, gain, shift) · z batch n×d · mean running means vector d · var running variances vector d · gain vector d · shift vector d → n×d
-- Evaluation mode: each column standardised with the running statistics, so a sample's output no longer depends on its batch-mates.
def batchNormEval(z, mean, var, gain, shift) ≔ stacked(z, gain) · (z − stacked(z, mean)) / stacked(z, sqrt(var + 1e-5)) + stacked(z, shift)

-- runningMean(run, z, m) · run running means vector d · z batch n×d · m momentum scalar → vector d
-- The running mean moved towards the batch mean, (1 − m) run + m mean(z).
def runningMean(run, z, m) ≔ (1 − m) · run + m · columnMean(z)

-- runningVar(run, z, m) · run running variances vector d · z batch n×d, n ≥ 2 · m momentum scalar → vector d
-- The running variance moved towards the batch's sample variance (divided by n − 1), (1 − m) run + m var(z).
def runningVar(run, z, m) ≔ (1 − m) · run + m · columnVariance(z)

-- Building blocks

-- batchVar(z) · z batch n×d → vector d
-- The population variance of each column, (1/n) Σ_i (z_ij − mean_j)².
def batchVar(z) ≔ columnMean(columnCentred(z)²)


-- Normalising each sample

-- layerNormed(a, gain, shift) · a activations n×d · gain vector d · shift vector d → n×d
-- Layer normalisation with its learned gain and shift: each row standardised over its features (population variance, 1e-5), then scaled and moved.
def layerNormed(a, gain, shift) ≔ stacked(a, gain) · rowCentred(a) / lifted(a, sqrt(rowSpread(a) + 1e-5)) + stacked(a, shift)

-- rmsNorm(a, gain) · a activations n×d · gain vector d → n×d
-- Each row divided by its root mean square, √(mean_j a_ij² + 1e-5), then scaled by gain; no centring, no shift.
def rmsNorm(a, gain) ≔ stacked(a, gain) · a / lifted(a, sqrt(rowMean(a²) + 1e-5))

-- Building blocks

-- rowCentred(a) · a n×d → n×d
-- Each row minus its own mean.
def rowCentred(a) ≔ a − lifted(a, rowMean(a))

-- rowSpread(a) · a n×d → vector n
-- The population variance of each row, (1/d) Σ_j (a_ij − mean_i)².
def rowSpread(a) ≔ rowMean(rowCentred(a)²)


-- Smooth activations

-- gelu(z) · z any tensor → same shape
-- The Gaussian error linear unit z Φ(z) = ½ z (1 + erf(z/√2)), exact (PyTorch's nn.GELU()).
def gelu(z) ≔ 0.5 · z · (1 + erf(z / sqrt(2)))

-- geluTanh(z) · z any tensor → same shape
-- GELU's tanh approximation ½ z (1 + tanh(√(2/π) (z + 0.044715 z³))), within 4.7e-4 of gelu.
def geluTanh(z) ≔ 0.5 · z · (1 + tanh(sqrt(2 / 3.141592653589793) · (z + 0.044715 · z ^ 3)))

-- silu(z) · z any tensor → same shape
-- The sigmoid linear unit z σ(z), also called swish.
def silu(z) ≔ z · sigmoid(z)


-- Dropout

-- dropout(x, p, key, step) · x any tensor · p the fraction dropped, 0 ≤ p < 1 · key seed scalar · step counter scalar (the training step) → same shape as x
-- Inverted dropout: each entry kept with probability 1 − p and scaled by 1/(1 − p), zeroed otherwise; the mask is bernoulli(1 − p, key, step, x), so a step's mask is reproducible from its key and step alone.
def dropout(x, p, key, step) ≔ x · bernoulli(1 − p, key, step, x) / (1 − p)
