-- QTable: Q-learning, off-policy, one batch of experience per call of train.
--
-- The constructor takes the shape of the world and train takes the experience, so one
-- declaration serves a 21-state cliff and a 500-state inventory alike. The target values the
-- landing state by its best action, whatever the learner goes on to do there: Q-learning learns
-- the greedy policy's values while it explores. examples/Sarsa.hb differs in that one line, and
-- examples/cliff_walk.py runs both on a cliff.

open Prelude.Temporal
open Prelude.Policies

-- QTable(states, actions) · states number of states · actions number of actions
-- A table of action values, all 0 at the start, learned by Q-learning.
model QTable(states, actions) : Learner {
  weight q : Tensor[states, actions] from 0

  -- train(s, a, rw, s2, done, rate, gamma) · s states left, a actions taken, rw rewards, s2 states reached, done 1 where the episode ended: vectors n · rate step size · gamma discount
  -- One temporal-difference step towards rw + γ max_a q(s2, a).
  def train(s, a, rw, s2, done, rate, gamma) {
    q ≔ nudged(q, marked(stateIds(q), s), marked(actionIds(q), a), qTarget(q, marked(stateIds(q), s2), rw, gamma, done), rate)
  }

  -- worth · → vector states: each state's value under the greedy policy
  def worth ≔ rowMost(q)

  -- plan · → states×actions: the greedy policy, ties split
  def plan ≔ greedyOf(q)

  -- act(s, eps) · s states vector n · eps exploration rate → n×actions: ε-greedy chances in each state asked
  def act(s, eps) ≔ einsum("is,sa->ia", marked(stateIds(q), s), exploring(q, eps))
}
