-- Classifier: two classes are one more index.
--
-- The network is the Perceptron's, relu(X W1) W2 without biases, with a last layer as wide as
-- the number of classes and targets written one column per class (one-hot rows). A column of
-- ones among the inputs stands in for the biases: without it every score at the origin is 0
-- whatever the weights, a tie no training breaks. eval answers the raw scores; shares turns
-- them into a distribution per row; winner marks the class with the largest score. The softmax
-- is monotone, so shares and scores always pick the same winner, and a tie of scores marks
-- every tied class.

open Prelude.Networks
open Prelude.Kernels
open Prelude.LinearAlgebra

-- Classifier(inputs, hidden, classes, seed) · inputs columns of x · hidden width of the hidden layer · classes number of classes · seed of the initial draws
-- A two-layer rectified network scoring each row of x once per class, trained on squared error.
model Classifier(inputs, hidden, classes, seed) : Learner {
  weight first  : Tensor[inputs, hidden]  from gaussian(seed) · 0.5
  weight second : Tensor[hidden, classes] from gaussian(seed) · 0.5

  -- train(x, y, rate) · x inputs n×inputs · y one-hot classes n×classes · rate learning rate scalar
  -- One gradient step on both layers, each computed at the weights as the step began.
  def train(x, y, rate) {
    first  ≔ stepFirst(rate, x, y, first, second)
    second ≔ stepSecond(rate, x, y, first, second)
  }

  -- eval(x) · x inputs n×inputs → scores n×classes
  def eval(x) ≔ outputs(x, first, second)

  -- shares(x) · x inputs n×inputs → n×classes, each row a distribution
  -- The softmax of each row of scores.
  def shares(x) ≔ softmaxRows(eval(x))

  -- winner(x) · x inputs n×inputs → 0/1 n×classes
  -- A 1 for the class with the largest score in each row (for every class tied for it).
  def winner(x) ≔ highest(eval(x))

  -- loss(x, y) · x inputs n×inputs · y one-hot classes n×classes → scalar
  -- The squared error summed over the classes and averaged over the rows.
  def loss(x, y) ≔ einsum("ij->", (eval(x) − y)²) / rows(x)
}
