-- Arithmetic
--
-- The entrywise functions the rest of the Prelude is built from: the rectifier, the logistic
-- sigmoid and its relatives, the row-wise softmax, one gradient-descent step, the probability
-- floor, and the two ways of repeating a vector across a matrix. Every definition here is
-- entrywise or row-wise and written on the primitives of the language (docs/language.md §5):
-- `einsum`, `exp`, `ln`, `tanh`, `abs`, `max`, `min`, `maximum`, comparisons and `^ 0`.
--
-- Conventions. Entrywise operators need operands of the same shape or one scalar; nothing
-- broadcasts. To repeat a vector across a matrix say so: `lifted(a, v)` repeats an n-vector
-- across the columns of an n×p matrix, `stacked(a, v)` repeats a p-vector down its rows.


-- Rectifiers and squashing functions

-- relu(z) · z any tensor → same shape
-- The rectifier max(z, 0), entrywise.
def relu(z) ≔ max(z, 0)

-- reluSlope(z) · z any tensor → 0/1 tensor, same shape
-- The rectifier's derivative [z > 0], entrywise; it is 0 at z = 0.
def reluSlope(z) ≔ z > 0

-- sigmoid(z) · z any tensor → values in [0, 1], same shape
-- The logistic function 1 / (1 + e^(−z)), entrywise; it reaches exactly 0 for z below about −745.
def sigmoid(z) ≔ 1 / (1 + exp(0 − z))

-- softplus(z) · z any tensor → same shape
-- The smooth rectifier ln(1 + e^z), entrywise, written as max(z, 0) + ln(1 + e^(−|z|)) so it never overflows.
def softplus(z) ≔ relu(z) + ln(1 + exp(0 − abs(z)))

-- clipped(z, lo, hi) · z any tensor · lo lower bound scalar · hi upper bound scalar → same shape as z
-- Each entry of z moved into the interval [lo, hi].
def clipped(z, lo, hi) ≔ min(max(z, lo), hi)

-- signOf(z) · z any tensor → entries −1, 0 or 1, same shape
-- The sign of each entry, 0 at 0.
def signOf(z) ≔ (z > 0) − (z < 0)


-- Row-wise softmax

-- softmaxRows(m) · m scores n×q → shares n×q, each row summing to one
-- The softmax of each row, e^(m_ij) / Σ_j' e^(m_ij'), computed after subtracting each row's maximum so it never overflows.
def softmaxRows(m) ≔ exp(rowShifted(m)) / lifted(m, einsum("ij->i", exp(rowShifted(m))))

-- logSumExpRows(m) · m scores n×q → vector n
-- The log of the sum of the exponentials of each row, ln Σ_j e^(m_ij), shifted by the row maximum so it never overflows.
def logSumExpRows(m) ≔ maximum(m, 1) + ln(einsum("ij->i", exp(rowShifted(m))))

-- rowShifted(m) · m scores n×q → n×q
-- Each row minus its own maximum, so the largest entry of every row is 0.
def rowShifted(m) ≔ m − lifted(m, maximum(m, 1))


-- Descent and floors

-- descend(w, g, r) · w weights, any shape · g gradient, same shape as w · r learning rate scalar → updated weights, same shape as w
-- One gradient-descent step, w − r·g.
def descend(w, g, r) ≔ w − r · g

-- floorOf(p) · p probabilities, any shape → same shape
-- Each probability raised to at least 1e-12, so that its logarithm is finite.
def floorOf(p) ≔ max(p, 1e-12)


-- Repeating a vector across a matrix, ones and zeros

-- lifted(a, v) · a any matrix n×p (only its shape is read) · v vector n → matrix n×p
-- The vector v repeated across the columns of a matrix shaped like a: lifted(a, v)_ij = v_i.
def lifted(a, v) ≔ einsum("ij,i->ij", a ^ 0, v)

-- stacked(a, v) · a any matrix n×p (only its shape is read) · v vector p → matrix n×p
-- The vector v repeated down the rows of a matrix shaped like a: stacked(a, v)_ij = v_j.
def stacked(a, v) ≔ einsum("ij,j->ij", a ^ 0, v)

-- ones(x) · x any tensor (only its shape is read) → all ones, same shape
-- A tensor of ones shaped like x.
def ones(x) ≔ x ^ 0

-- zeros(x) · x any tensor (only its shape is read) → all zeros, same shape
-- A tensor of zeros shaped like x.
def zeros(x) ≔ 0 · ones(x)
