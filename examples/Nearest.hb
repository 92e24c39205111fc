-- Nearest: models that never train.
--
-- A network spends its fit compressing the data into weights; these keep every known point and
-- do the work when a question comes, so "training" is handing the points over. Classes are
-- one-hot: g has a row per known point x and a column per class. Prelude.Neighbours does the
-- work and documents the ties: equal distances are taken in row order, a tied vote marks every
-- tied class.

open Prelude.Neighbours
open Prelude.Kernels

-- classifyNear(z, x, g, k) · z queries m×p · x known points n×p · g classes n×c · k neighbours → one-hot m×c
-- The class most of each query's k nearest known points belong to.
fn classifyNear(z, x, g, k) ↦ knnClassify(z, x, g, k)

-- sharesNear(z, x, g, k) · as classifyNear → m×c, each row summing to one
-- The same vote as shares: which fraction of the k neighbours is in each class.
fn sharesNear(z, x, g, k) ↦ knnShares(z, x, g, k)

-- regressNear(z, x, y, k) · z queries m×p · x known points n×p · y known values vector n · k neighbours → vector m
-- The mean value of the k nearest known points.
fn regressNear(z, x, y, k) ↦ knnRegress(z, x, y, k)

-- nearestCentre(z, x, g) · z queries m×p · x known points n×p · g classes n×c → one-hot m×c
-- The class whose mean point is nearest: c points kept instead of n.
fn nearestCentre(z, x, g) ↦ centroidPredict(z, x, g)

-- howFar(z, x) · z queries m×p · x known points n×p → m×n
-- Every query's Euclidean distance to every known point: what the neighbours are ranked by.
fn howFar(z, x) ↦ distances(z, x)
