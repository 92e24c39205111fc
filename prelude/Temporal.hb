-- Temporal
--
-- Temporal-difference learning on a table: after each step a learner moves its estimate for
-- the state and action it left part of the way towards a target, reward + γ · (the value of
-- where it landed). Q-learning (Watkins 1989) values the landing state by its best action, so it
-- learns the greedy policy's values whatever it does; SARSA (Rummery and Niranjan 1994) values it
-- by the action the learner really took next, so it learns the values of the policy it follows,
-- exploration included; expected SARSA averages over a policy's choices (Sutton and Barto, 2nd
-- ed., §6.4 to §6.6).
--
-- Conventions. The table q is S×A, one row per state and one column per action. A batch of n
-- steps comes as vectors n (a single step is a vector of one): rewards rw, and done, 1 where the
-- step ended the episode (its landing state is then worth 0) and 0 elsewhere. States and actions
-- enter marked: s, s2 are n×S and a, a2 are n×A, one 1 per row, as Prelude.Policies' marked
-- makes them, marked(stateIds(q), s) and marked(actionIds(q), a); open Policies beside this
-- module for marked, actionIds and exploring. γ is a scalar in [0, 1] and the rate a scalar in
-- (0, 1]: at rate 1 the entry becomes its target. Every step of a batch is computed from the
-- table as the call found it, and a state and action named by several steps of one batch moves
-- by the sum of their steps.
--
-- Ties. greedyOf shares each state's greedy choice equally among the actions tied for its
-- largest value (Policies.greedyShares), the same split exploring makes at ε = 0.

open Prelude.Policies


-- Targets

-- qTarget(q, s2, rw, gamma, done) · q table S×A · s2 landing states marked n×S · rw rewards vector n · gamma discount scalar · done 1 where the episode ended, vector n → targets vector n
-- Q-learning's target, rw + γ (1 − done) max_a q(s2, a): the landing state valued by its best action.
def qTarget(q, s2, rw, gamma, done) ≔ rw + gamma · (1 − done) · einsum("is,s->i", s2, rowMost(q))

-- sarsaTarget(q, s2, a2, rw, gamma, done) · as qTarget · a2 the actions taken next, marked n×A → targets vector n
-- SARSA's target, rw + γ (1 − done) q(s2, a2): the landing state valued by the action taken there.
def sarsaTarget(q, s2, a2, rw, gamma, done) ≔ rw + gamma · (1 − done) · taken(q, s2, a2)

-- expectedSarsaTarget(q, s2, policy, rw, gamma, done) · as qTarget · policy S×A, each row a distribution → targets vector n
-- Expected SARSA's target, rw + γ (1 − done) Σ_a policy(s2, a) q(s2, a); with the greedy policy it is qTarget.
def expectedSarsaTarget(q, s2, policy, rw, gamma, done) ≔ rw + gamma · (1 − done) · einsum("is,sa,sa->i", s2, policy, q)


-- The step

-- nudged(q, s, a, target, rate) · q table S×A · s states left marked n×S · a actions taken marked n×A · target vector n · rate step size scalar → table S×A
-- The table with each q(s, a) moved towards its target, q(s, a) + rate (target − q(s, a)); every other entry unchanged.
def nudged(q, s, a, target, rate) ≔ q + rate · einsum("is,ia,i->sa", s, a, target − taken(q, s, a))


-- Reading the table

-- stateIds(q) · q table S×A (only its shape is read) → vector S
-- The state numbers 0, 1, …, S−1.
def stateIds(q) ≔ positions(q, 0)

-- rowMost(q) · q table S×A → vector S
-- Each state's value under the greedy policy, max_a q(s, a).
def rowMost(q) ≔ maximum(q, 1)

-- greedyOf(q) · q table S×A → policy S×A
-- The greedy policy: each state's probability 1 shared by the actions tied for its largest value.
def greedyOf(q) ≔ greedyShares(q)

-- Building blocks

-- taken(q, s, a) · q table S×A · s states marked n×S · a actions marked n×A → vector n
-- The table's entry for each marked state and action, q(s_i, a_i).
def taken(q, s, a) ≔ einsum("is,sa,ia->i", s, q, a)
