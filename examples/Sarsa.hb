-- Sarsa: the same step as QTable, on-policy, one line apart.
--
-- The target values the landing state by the action the learner really took there, exploration
-- included, so SARSA learns the values of the policy it follows. On a cliff that shows: an
-- ε-greedy walker sometimes steps off the edge, SARSA's table counts those falls and its greedy
-- path keeps away from the edge, where Q-learning's walks beside it (examples/cliff_walk.py).

open Prelude.Temporal
open Prelude.Policies

-- Sarsa(states, actions) · states number of states · actions number of actions
-- A table of action values, all 0 at the start, learned by SARSA.
model Sarsa(states, actions) : Learner {
  weight q : Tensor[states, actions] from 0

  -- train(s, a, rw, s2, a2, done, rate, gamma) · as QTable's train · a2 the actions taken next, vector n
  -- One temporal-difference step towards rw + γ q(s2, a2).
  def train(s, a, rw, s2, a2, done, rate, gamma) {
    q ≔ nudged(q, marked(stateIds(q), s), marked(actionIds(q), a), sarsaTarget(q, marked(stateIds(q), s2), marked(actionIds(q), a2), rw, gamma, done), rate)
  }

  -- worth · → vector states: each state's value under the greedy policy
  def worth ≔ rowMost(q)

  -- plan · → states×actions: the greedy policy, ties split
  def plan ≔ greedyOf(q)

  -- act(s, eps) · s states vector n · eps exploration rate → n×actions: ε-greedy chances in each state asked
  def act(s, eps) ≔ einsum("is,sa->ia", marked(stateIds(q), s), exploring(q, eps))
}
