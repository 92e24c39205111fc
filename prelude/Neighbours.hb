-- Neighbours
--
-- Models that keep their data and do the work at question time. The k nearest known points of
-- each query vote for their class (knnClassify, knnShares) or average their values
-- (knnRegress); the nearest centroid lets one mean point stand for each class
-- (centroidPredict), keeping c points instead of n.
--
-- Conventions. Queries z are m×p and known points x are n×p, one point per row. Classes g are
-- n×c, one row per known point and one column per class, with a 1 where the point belongs
-- (one-hot; other non-negative weights weigh a point's vote and its pull on its centroid).
-- Values y are a vector n. Nearness is Euclidean distance, Kernels.sqDistances. k counts the
-- neighbours: a whole number ≥ 0 (anything else is E500, raised by the selection loop
-- pickNearest); k above n means every known point, and k = 0 means none, so every share and
-- average is 0/0 = NaN.
--
-- Ties. Known points at equal distance from a query are taken in the order of their rows in
-- x, the earlier first, so exactly min(k, n) points vote. A vote that ties marks every class
-- that tied: a row of knnClassify then holds more than one 1, and knnShares shows the split
-- (with two classes an odd k cannot tie). centroidPredict marks every class whose centroid is
-- nearest the same way. A class with no known points has no centroid and is never predicted.
-- A query or known point holding NaN leaves that query with no neighbours (NaN answers).
--
-- Cost. The selection takes the nearest remaining point k times, each pass over the m×n
-- distances: k·m·n work beside the m×n×p of the distances, and no m×n×n comparison tensor.

open Prelude.Arithmetic
open Prelude.Kernels
open Prelude.LinearAlgebra


-- The k nearest neighbours

-- knnClassify(z, x, g, k) · z queries m×p · x known points n×p · g classes n×c, one-hot · k neighbours → 0/1 m×c
-- The majority vote of each query's k nearest known points: a 1 for the class with the most votes (for every class tied for the most).
def knnClassify(z, x, g, k) ≔ highest(knnVotes(z, x, g, k))

-- knnShares(z, x, g, k) · arguments as knnClassify → shares m×c, each row summing to one for one-hot g
-- The share of each query's k nearest known points that belongs to each class: votes / min(k, n).
def knnShares(z, x, g, k) ≔ knnVotes(z, x, g, k) / lifted(knnVotes(z, x, g, k), einsum("ij->i", nearestOf(z, x, k)))

-- knnRegress(z, x, y, k) · z queries m×p · x known points n×p · y known values vector n · k neighbours → vector m
-- The mean of the values of each query's k nearest known points.
-- Instead: for values with several columns (n×q), knnShares(z, x, y, k) averages every column over the same neighbours.
def knnRegress(z, x, y, k) ≔ einsum("ij,j->i", nearestOf(z, x, k), y) / einsum("ij->i", nearestOf(z, x, k))

-- Building blocks

-- knnVotes(z, x, g, k) · arguments as knnClassify → m×c
-- How many of each query's k nearest known points belong to each class (their weights in g, summed).
def knnVotes(z, x, g, k) ≔ einsum("ij,jc->ic", nearestOf(z, x, k), g)

-- nearestOf(z, x, k) · z queries m×p · x known points n×p · k neighbours → 0/1 m×n
-- A 1 at each query's min(k, n) nearest known points, ties taken in row order.
-- Instead: round k to a whole number ≥ 0 before the call: it counts the neighbours that vote, and the selection loop refuses anything else (E500).
def nearestOf(z, x, k) ≔ pickNearest(min(k, rows(x)), sqDistances(z, x), 0 · sqDistances(z, x))

-- pickNearest(t, d, chosen) · t picks left · d distances m×n · chosen 0/1 m×n, the points taken so far → 0/1 m×n
-- Takes, t more times, each row's nearest point not yet chosen (the first of equals): the chosen ones are moved 1e300 away.
def pickNearest(t, d, chosen) ≔
  if t = 0 then chosen
  else pickNearest(t − 1, d, chosen + argmin(d + 1e300 · chosen, 1))


-- The nearest centroid

-- centroidPredict(z, x, g) · z queries m×p · x known points n×p · g classes n×c → 0/1 m×c
-- A 1 for the class whose centroid is nearest each query (for every class tied for nearest); an empty class is never chosen.
def centroidPredict(z, x, g) ≔
  let d ≔ sqDistances(z, centroids(x, g)) in lowest(d + stacked(d, 1e300 · (classSizes(g) = 0)))

-- Building blocks

-- centroids(x, g) · x known points n×p · g classes n×c → c×p
-- Each class's mean point, Σ_j g_jc x_j / Σ_j g_jc; a class with no points gets the origin (and centroidPredict skips it).
def centroids(x, g) ≔ einsum("jc,jp,c->cp", g, x, 1 / (classSizes(g) + (classSizes(g) = 0)))

-- classSizes(g) · g classes n×c → vector c
-- How many known points each class has (the sum of its column of g).
def classSizes(g) ≔ einsum("jc->c", g)
