-- Policies
--
-- How a learner turns what it believes about its actions into how it acts: ε-greedy
-- exploration and upper confidence bounds (UCB), each answering a distribution over the actions
-- (drawing one is the caller's job), and the bookkeeping of a bandit: marking the actions taken,
-- tallying what they paid, dividing by counts that may be zero.
--
-- Conventions. Action values v are S×A, one row per state and one column per action; a bandit
-- has one state, so its values are a 1×A row. A policy has the same shape, each row a
-- distribution over the actions that sums to one. States and actions are numbered from 0, and
-- experience comes as vectors n, one entry per step (a single step is a vector of one), so
-- marked(actionIds(v), a) is an n×A matrix with one 1 per row. Exploration is arithmetic, never
-- a branch: ε-greedy is the weighted sum (1 − ε) greedy + ε uniform, so the best action's share
-- is 1 − ε + ε/A (the uniform part picks it too), and ε must lie in [0, 1].
--
-- Ties split. The greedy share of a row goes in equal parts to every action tied for the row's
-- largest value (exact float64 equality), never to the first of them: a fresh bandit whose
-- three arms all look alike gives each a third. A row holding NaN has no largest value, and its
-- policy is NaN.
--
-- Zero counts. safe(c) is c with every 0 replaced by 1, so total / safe(counts) is 0 for an
-- action never taken instead of 0/0. In confident, an action never taken comes first: while a
-- row has such actions they share the whole row equally, whatever the values say; once every
-- action has been taken, the row goes to the largest upper bound v + c √(ln N / n), with n the
-- action's count and N the row's total (ln N read as 0 while N ≤ 1), split among ties. Counts
-- are whole numbers ≥ 0.
--
-- ones is Arithmetic's, re-exported under the name the samples use: a file that opens both
-- modules writes Arithmetic.ones or Policies.ones (the bare name is ambiguous, E202).

open Prelude.Arithmetic
open Prelude.LinearAlgebra


-- Acting on action values

-- exploring(v, eps) · v action values S×A · eps exploration rate scalar in [0, 1] → policy S×A
-- ε-greedy: (1 − ε) shared by the actions tied for the best value, plus ε/A to every action.
def exploring(v, eps) ≔ (1 − eps) · greedyShares(v) + eps / columns(v)

-- confident(v, c, n) · v mean values S×A · c exploration weight scalar ≥ 0 · n counts S×A → policy S×A
-- UCB: untried actions first (sharing the row); then the best upper bound v + c √(ln N / n), ties split.
def confident(v, c, n) ≔
  let untried ≔ n = 0,
      waiting ≔ einsum("sa->s", untried) > 0
  in lifted(v, waiting) · untried / safe(lifted(v, einsum("sa->s", untried)))
     + lifted(v, 1 − waiting) · greedyShares(upperBounds(v, c, n))

-- Building blocks

-- greedyShares(v) · v action values S×A → policy S×A
-- The greedy policy: 1 shared equally by the actions tied for each row's largest value.
def greedyShares(v) ≔ highest(v) / lifted(v, einsum("sa->s", highest(v)))

-- upperBounds(v, c, n) · arguments as confident → S×A
-- Each action's upper confidence bound, v + c √(ln max(N, 1) / safe(n)), with N the row's total count.
def upperBounds(v, c, n) ≔ v + c · sqrt(ln(max(lifted(v, einsum("sa->s", n)), 1)) / safe(n))


-- Experience

-- marked(ids, a) · ids the ids of an axis, 0 … A−1, vector A (only its length is read) · a ids taken, whole numbers, vector n → 0/1 n×A
-- Row i marks the id a_i, [a_i = j]; an id outside 0 … A−1 is E511, and a scalar a gives a single mark, a vector A.
def marked(ids, a) ≔ oneHot(a, rows(ids))

-- actionIds(v) · v action values S×A (only its shape is read) → vector A
-- The action numbers 0, 1, …, A−1.
def actionIds(v) ≔ positions(v, 1)

-- tally(t, a, w) · t a bandit's row 1×A (only its shape is read) · a arms pulled vector n · w amounts vector n → 1×A
-- What each arm received, Σ_i w_i [a_i = arm]: a bandit's takings when w holds the rewards, its pull counts when w = ones(a).
def tally(t, a, w) ≔ einsum("sa,i,ia->sa", t ^ 0, w, marked(actionIds(t), a))

-- ones(x) · x any tensor (only its shape is read) → all ones, same shape
-- A tensor of ones shaped like x (Arithmetic.ones).
def ones(x) ≔ Arithmetic.ones(x)

-- safe(c) · c counts, any shape → same shape
-- The counts with every 0 replaced by 1, so a division by them is never 0/0.
def safe(c) ≔ c + (c = 0)
