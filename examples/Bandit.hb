-- Bandit: arms, rewards, and the choice between using what is known and finding out more.
--
-- The learner keeps two 1×arms rows, what each arm has paid in total and how often it was
-- pulled, so an estimate is a division made when it is asked for. An arm never pulled is
-- believed to be worth `start`: a start above anything the arms pay makes every untried arm look
-- best until it is tried (optimism, exploration without a coin). choose answers ε-greedy chances,
-- 1 − ε + ε/A for the best arm and ties split; ucb answers the upper-confidence choice, untried
-- arms first. Both are distributions: drawing an arm is the caller's job (examples/bandit.py).

open Prelude.Policies

-- Bandit(arms, start) · arms number of arms · start the worth of an arm never pulled
-- A multi-armed bandit learner that averages each arm's rewards.
model Bandit(arms, start) : Learner {
  weight total  : Tensor[1, arms] from 0
  weight counts : Tensor[1, arms] from 0

  -- train(a, rw) · a arms pulled, numbered from 0, vector n · rw their rewards vector n
  -- Adds a batch of pulls and what they paid.
  def train(a, rw) {
    total  ≔ total + tally(total, a, rw)
    counts ≔ counts + tally(counts, a, ones(rw))
  }

  -- means · → 1×arms
  -- Each arm's average reward, and `start` for an arm never pulled.
  def means ≔ (total + start · (counts = 0)) / safe(counts)

  -- choose(eps) · eps exploration rate in [0, 1] → 1×arms chances
  def choose(eps) ≔ exploring(means, eps)

  -- ucb(c) · c exploration weight ≥ 0 → 1×arms chances
  def ucb(c) ≔ confident(means, c, counts)
}
