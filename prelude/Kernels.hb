-- Kernels
--
-- Distances and similarities between the rows of two matrices, the ground that
-- nearest-neighbour methods and kernel machines stand on, and the row-wise softmax under the
-- name the samples look for it by.
--
-- Conventions. Queries z are m×p and known points x are n×p, one point per row, so every
-- distance and kernel here answers an m×n matrix whose entry (i, j) compares z_i with x_j.
-- Distances are Euclidean unless named otherwise. sqDistances is computed as
-- ‖z_i‖² + ‖x_j‖² − 2 z_i·x_j, one matrix product, so it runs at BLAS speed; rounding can leave
-- a distance off by about 1e-16 (‖z_i‖² + ‖x_j‖²), and the result is clamped at 0 so that never
-- makes it negative. cityBlock compares coordinates one by one and so builds an m×n×p
-- intermediate. softmaxRows is Arithmetic's, re-exported here: a file that opens both modules
-- writes Arithmetic.softmaxRows or Kernels.softmaxRows (the bare name is ambiguous, E202).

open Prelude.Arithmetic


-- Distances

-- sqDistances(z, x) · z queries m×p · x known points n×p → m×n
-- The squared Euclidean distance between every query and every known point, ‖z_i − x_j‖², clamped at 0.
def sqDistances(z, x) ≔ max(einsum("ip,jp->ij", z², x ^ 0) + einsum("ip,jp->ij", z ^ 0, x²) − 2 · einsum("ip,jp->ij", z, x), 0)

-- distances(z, x) · z queries m×p · x known points n×p → m×n
-- The Euclidean distance between every query and every known point, ‖z_i − x_j‖.
def distances(z, x) ≔ sqrt(sqDistances(z, x))

-- cityBlock(z, x) · z queries m×p · x known points n×p → m×n
-- The city-block (Manhattan, L1) distance, Σ_k |z_ik − x_jk|, coordinate by coordinate (an m×n×p intermediate).
def cityBlock(z, x) ≔ einsum("ijk->ij", abs(einsum("ik,jk->ijk", z, x ^ 0) − einsum("ik,jk->ijk", z ^ 0, x)))


-- Kernels

-- linearKernel(z, x) · z queries m×p · x known points n×p → m×n
-- The inner product of every pair, z_i · x_j.
def linearKernel(z, x) ≔ einsum("ip,jp->ij", z, x)

-- gaussianKernel(z, x, w) · z queries m×p · x known points n×p · w width scalar > 0 → m×n, entries in (0, 1]
-- The Gaussian (RBF) kernel e^(−‖z_i − x_j‖² / (2 w²)): 1 for equal points, falling with distance.
def gaussianKernel(z, x, w) ≔ exp(0 − sqDistances(z, x) / (2 · w²))

-- polynomialKernel(z, x, c, d) · z queries m×p · x known points n×p · c offset scalar · d degree scalar → m×n
-- The polynomial kernel (z_i · x_j + c)^d; give d as a whole number, as (negative)^(fraction) is NaN.
def polynomialKernel(z, x, c, d) ≔ (linearKernel(z, x) + c) ^ d


-- Shares

-- softmaxRows(m) · m scores n×q → shares n×q, each row summing to one
-- The softmax of each row, shifted by the row's maximum so it never overflows (Arithmetic.softmaxRows).
def softmaxRows(m) ≔ Arithmetic.softmaxRows(m)
