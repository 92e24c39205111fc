-- Iris: Fisher's iris flowers classified by a small network, trained with Adam, with dropout
--
-- Four measurements per flower (standardised by the driver, examples/iris.py) go through one
-- hidden ReLU layer to three class scores; the loss is the softmax cross-entropy against the
-- species. Every weight and its two Adam moments are updated in one line over the group
-- `weights`. With drop > 0 the hidden layer is dropped out while training: each step draws
-- its own mask, keyed by the seed and the step count (`taken`), so training is reproducible
-- step by step; the methods that evaluate use every unit.

open Prelude.Arithmetic
open Prelude.Losses
open Prelude.Norms
open Prelude.Optimisers


-- Classifier(inputs, hidden, classes, seed, drop) · sizes of the input, the hidden layer and the classes · seed of the draws · drop the share of hidden units dropped while training (0: none)
-- A network inputs → hidden (ReLU) → classes, its weights drawn uniformly from ±1/√(fan in).
model Classifier(inputs, hidden, classes, seed, drop) : Learner {
  weight w1 : Tensor[inputs, hidden]  from (2 · uniform(seed) − 1) / sqrt(inputs)
  weight b1 : Tensor[hidden]          from 0
  weight w2 : Tensor[hidden, classes] from (2 · uniform(seed) − 1) / sqrt(hidden)
  weight b2 : Tensor[classes]         from 0
  state taken : Tensor[]              from 0
  state m, v like weights             from 0

  -- train(x, labels, rate) · x standardised measurements n×inputs · labels species 0 … classes − 1, vector n · rate Adam's learning rate
  -- One Adam step on the cross-entropy of the dropped-out network.
  def train(x, labels, rate) {
    (weights, m, v) ≔ adam(weights, m, v, ∂ trainingLoss(x, labels) / ∂ weights, taken + 1, rate, 0.9, 0.999, 1e-8)
    taken ≔ taken + 1
  }

  -- trainingLoss(x, labels) · as train → scalar
  -- The loss a step descends: the hidden layer dropped out by this step's mask.
  def trainingLoss(x, labels) ≔ crossEntropy(scores(dropout(features(x), drop, seed, taken)), labels)

  -- logits(x) · x n×inputs → class scores n×classes
  def logits(x) ≔ scores(features(x))

  -- loss(x, labels) · as train → scalar
  -- The cross-entropy of the whole network (no dropout).
  def loss(x, labels) ≔ crossEntropy(logits(x), labels)

  -- correct(x, labels) · as train → share of flowers whose largest score is their species
  def correct(x, labels) ≔ accuracy(logits(x), labels)

  -- features(x) · x n×inputs → hidden activations n×hidden
  def features(x) ≔ relu(einsum("np,ph->nh", x, w1) + stacked(einsum("np,ph->nh", x, w1), b1))

  -- scores(h) · h hidden activations n×hidden → n×classes
  def scores(h) ≔ einsum("nh,hc->nc", h, w2) + stacked(einsum("nh,hc->nc", h, w2), b2)
}
