// reference/src/topology.h — who talks to whom: the ring and the double binary tree.
//
// Ring: rank r sends to r+1 and receives from r-1 (mod n).
//
// Double binary tree (two complementary binary trees, each carrying half of
// the data). Tree 0 is an in-order binary tree over positions 0..n-1 where
// position p = rank: a position whose lowest set bit is l has children p-l/2
// and p+h, h the largest power of two below l with p+h < n; odd positions are
// leaves; position 0 is the root and has one child, the largest power of two
// below n. Tree 1 is the same shape over positions p = (rank+1) mod n: every
// odd rank (a leaf in tree 0) sits at an even position, i.e. is interior in
// tree 1, and every even rank but n-1 is a leaf there. So for even n each
// rank is a leaf in exactly one tree and every rank's links carry data in
// both directions; the roots differ (rank 0 and rank n-1).
#pragma once

#include <vector>

namespace ringside::reference::detail {

struct TreeNode {
  int parent = -1;  // rank, -1 for the root
  int children[2] = {-1, -1};
  int nchildren = 0;
  int depth = 0;  // root 0
};

// Rank `rank`'s place in tree `tree` (0 or 1) over n ranks.
TreeNode treeNode(int tree, int rank, int n);

// The peers rank `rank` needs a connection to for both algorithms, sorted, unique.
std::vector<int> algorithmPeers(int rank, int n);

}  // namespace ringside::reference::detail
