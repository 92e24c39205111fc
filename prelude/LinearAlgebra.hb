-- LinearAlgebra
--
-- Products, transposes, traces, identities and a linear solver, each a contraction written
-- with einsum, and the solver a loop that names itself.
--
-- Conventions. Matrices are indexed row first; a vector is neither a row nor a column, so
-- mulVec(a, v) is a v and vecMul(v, a) is vᵀ a. identity(a) reads its size from a square
-- matrix a; identityOf(v) reads it from a vector v. solve(a, b) is conjugate gradient: it needs
-- a symmetric positive definite a (a Gram matrix, a covariance) and is exact, in exact
-- arithmetic, after rows(a) steps. In floating point the search directions lose their
-- conjugacy and an ill-conditioned a needs more, so solve runs at most 10·rows(a) steps and
-- stops as soon as the residual's squared length falls to 1e-28 of b's (relative residual
-- 1e-14): a well-conditioned system stops after about rows(a) steps, and one with condition
-- number 1e6 still reaches about 1e-11.


-- Products

-- mul(a, b) · a matrix n×p · b matrix p×q → n×q
-- The matrix product, (a b)_ik = Σ_j a_ij b_jk.
def mul(a, b) ≔ einsum("ij,jk->ik", a, b)

-- mulVec(a, v) · a matrix n×p · v vector p → vector n
-- The matrix applied to a vector, (a v)_i = Σ_j a_ij v_j.
def mulVec(a, v) ≔ einsum("ij,j->i", a, v)

-- vecMul(v, a) · v vector n · a matrix n×p → vector p
-- The vector applied from the left, (vᵀ a)_j = Σ_i v_i a_ij.
def vecMul(v, a) ≔ einsum("i,ij->j", v, a)

-- dot(u, v) · u vector n · v vector n → scalar
-- The inner product, Σ_i u_i v_i.
def dot(u, v) ≔ einsum("i,i->", u, v)

-- outer(u, v) · u vector n · v vector p → n×p
-- The outer product, (u vᵀ)_ij = u_i v_j.
def outer(u, v) ≔ einsum("i,j->ij", u, v)

-- gram(x) · x matrix n×p → p×p
-- The Gram matrix xᵀ x, the inner products of every pair of columns.
def gram(x) ≔ einsum("ni,nj->ij", x, x)


-- Shapes and parts of a matrix

-- transpose(a) · a matrix n×p → p×n
-- The transpose, (aᵀ)_ji = a_ij.
def transpose(a) ≔ einsum("ij->ji", a)

-- trace(a) · a square matrix n×n → scalar
-- The sum of the diagonal, Σ_i a_ii.
def trace(a) ≔ einsum("ii->", a)

-- diagonal(a) · a square matrix n×n → vector n
-- The diagonal entries, a_ii.
def diagonal(a) ≔ einsum("ii->i", a)

-- diagonalOf(v) · v vector n → n×n
-- The square matrix with v on its diagonal and zeros elsewhere.
def diagonalOf(v) ≔ einsum("ij,j->ij", sameIndex(v), v)

-- identity(a) · a square matrix n×n (only its shape is read) → n×n
-- The identity matrix the size of a: ones where the row position equals the column position.
def identity(a) ≔ einsum("i,j->ij", positions(a, 0), positions(a, 1) ^ 0) = einsum("i,j->ij", positions(a, 0) ^ 0, positions(a, 1))

-- identityOf(v) · v vector n (only its length is read) → n×n
-- The n×n identity matrix, n the length of v.
def identityOf(v) ≔ sameIndex(v)

-- norm(v) · v vector n → scalar
-- The Euclidean length, √(Σ_i v_i²).
def norm(v) ≔ sqrt(dot(v, v))

-- frobenius(a) · a matrix n×p → scalar
-- The Frobenius norm, √(Σ_ij a_ij²).
def frobenius(a) ≔ sqrt(einsum("ij,ij->", a, a))

-- Building blocks

-- sameIndex(v) · v vector n (only its length is read) → n×n
-- The 0/1 matrix [i = j] for i, j = 0 … n−1, built by comparing positions.
def sameIndex(v) ≔ einsum("i,j->ij", positions(v, 0), positions(v, 0) ^ 0) = einsum("i,j->ij", positions(v, 0) ^ 0, positions(v, 0))


-- Solving

-- solve(a, b) · a symmetric positive definite n×n · b vector n → vector n
-- The x with a x = b, by conjugate gradient from x = 0: at most 10n steps, stopping once ‖r‖² ≤ 1e-28 ‖b‖² for the residual r.
def solve(a, b) ≔ cgLoop(10 · rows(a), a, 0 · b, b, b, 1e-28 · dot(b, b))

-- leastSquares(x, y) · x design n×p with independent columns · y targets vector n → coefficients vector p
-- The coefficients β minimising ‖x β − y‖², from the normal equations xᵀx β = xᵀy; append a column of ones to x for an intercept.
def leastSquares(x, y) ≔ solve(gram(x), vecMul(y, x))

-- Building blocks

-- cgLoop(t, a, x, r, p, tol) · t steps left scalar · a n×n · x iterate vector n · r residual b − a x vector n · p search direction vector n · tol squared-residual tolerance scalar → vector n
-- Conjugate-gradient steps from (x, r, p) until t runs out or r·r ≤ tol; answers the iterate.
def cgLoop(t, a, x, r, p, tol) ≔
  if (t = 0) + (dot(r, r) ≤ tol) > 0 then x
  else cgLoop(t − 1, a, x + cgStepSize(a, r, p) · p, cgResidual(a, r, p), cgDirection(a, r, p), tol)

-- cgStepSize(a, r, p) · a n×n · r residual vector n · p direction vector n → scalar
-- The exact line-search step along p, (r·r) / (p·a p).
def cgStepSize(a, r, p) ≔ dot(r, r) / dot(p, mulVec(a, p))

-- cgResidual(a, r, p) · arguments as cgStepSize → vector n
-- The residual after the step, r − α a p with α = cgStepSize(a, r, p).
def cgResidual(a, r, p) ≔ r − cgStepSize(a, r, p) · mulVec(a, p)

-- cgDirection(a, r, p) · arguments as cgStepSize → vector n
-- The next search direction, r' + (r'·r' / r·r) p with r' = cgResidual(a, r, p), conjugate to p under a.
def cgDirection(a, r, p) ≔ cgResidual(a, r, p) + dot(cgResidual(a, r, p), cgResidual(a, r, p)) / dot(r, r) · p


-- The extremes of each row
--
-- lowest and highest mark, in every row of a matrix, each column that holds the row's smallest
-- (largest) entry. Every tied column is marked, so a row can hold several ones and a constant row
-- is marked across; argmin(t, 1) and argmax(t, 1) mark only the first. Ties are exact float64
-- equality. A row holding NaN has no smallest or largest entry, so it gets no mark, as with
-- argmin and argmax.

-- lowest(t) · t scores n×p → 0/1 marks n×p
-- A one in every column that holds its row's minimum, [t_ij = min_j' t_ij'], every tie marked.
-- Instead: for a vector v, v = minimum(v, 0) marks its smallest entries (argmin(v, 0) only the first).
def lowest(t) ≔ t = einsum("ij,i->ij", t ^ 0, minimum(t, 1))

-- highest(t) · t scores n×p → 0/1 marks n×p
-- A one in every column that holds its row's maximum, [t_ij = max_j' t_ij'], every tie marked.
-- Instead: for a vector v, v = maximum(v, 0) marks its largest entries (argmax(v, 0) only the first).
def highest(t) ≔ t = einsum("ij,i->ij", t ^ 0, maximum(t, 1))
