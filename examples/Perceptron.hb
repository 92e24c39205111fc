-- Perceptron: a bias-free two-layer network that learns XOR
--
-- The network is relu(X W1) W2 with no bias anywhere. XOR needs none: with hidden units
-- relu(x1 − x2) and relu(x2 − x1) their sum is exactly XOR, and (0, 0) maps to 0 whatever the
-- weights. Training is full-batch gradient descent on L = 1/(2n) ‖Ŷ − Y‖², one step per call
-- of train (or `steps=N` of them in one compiled loop), using the Prelude's stepFirst and
-- stepSecond. examples/train_perceptron.py trains it and draws the loss curve.

open Prelude.Networks

-- Perceptron(inputs, hidden, seed) · inputs columns of x · hidden width of the hidden layer · seed of the initial draws
-- A two-layer rectified network without biases, trained by gradient descent.
model Perceptron(inputs, hidden, seed) : Learner {
  weight first  : Tensor[inputs, hidden] from gaussian(seed) · 0.5
  weight second : Tensor[hidden, 1]      from gaussian(seed) · 0.5

  -- train(x, y, rate) · x inputs n×inputs · y targets n×1 · rate learning rate scalar
  -- One gradient step on both layers, each computed at the weights as the step began.
  def train(x, y, rate) {
    first  ≔ stepFirst(rate, x, y, first, second)
    second ≔ stepSecond(rate, x, y, first, second)
  }

  -- eval(x) · x inputs n×inputs → outputs n×1
  -- The network's outputs, relu(X W1) W2.
  def eval(x) ≔ outputs(x, first, second)

  -- loss(x, y) · x inputs n×inputs · y targets n×1 → scalar
  -- The mean squared error of the outputs (twice the L that train descends).
  def loss(x, y) ≔ einsum("ij->", (eval(x) − y) · (eval(x) − y)) / rows(x)
}
