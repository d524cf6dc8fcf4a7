// reference/src/topology.cpp — see topology.h.
#include "topology.h"

#include <algorithm>

namespace ringside::reference::detail {

namespace {

int lowBit(int p) { return p & -p; }

// Children positions of position p in an in-order bit tree over n positions.
int childPositions(int p, int n, int out[2]) {
  int k = 0;
  if (p == 0) {
    if (n > 1) {
      int top = 1;
      while (top * 2 < n) top *= 2;  // largest power of two <= n-1
      out[k++] = top;
    }
    return k;
  }
  int l = lowBit(p);
  if (l == 1) return 0;
  out[k++] = p - l / 2;  // left subtree (p-l, p) is never empty
  for (int h = l / 2; h >= 1; h /= 2) {
    if (p + h < n) {
      out[k++] = p + h;  // right subtree (p, min(p+l, n))
      break;
    }
  }
  return k;
}

int positionOf(int tree, int rank, int n) { return tree == 0 ? rank : (rank + 1) % n; }
int rankAt(int tree, int pos, int n) { return tree == 0 ? pos : (pos - 1 + n) % n; }

}  // namespace

TreeNode treeNode(int tree, int rank, int n) {
  TreeNode node;
  if (n <= 1) return node;
  // Parent and depth by walking down from the root (n is small; done once per communicator).
  std::vector<int> parent(static_cast<size_t>(n), -1), depth(static_cast<size_t>(n), 0);
  std::vector<int> stack{0};
  while (!stack.empty()) {
    int p = stack.back();
    stack.pop_back();
    int c[2];
    int k = childPositions(p, n, c);
    for (int i = 0; i < k; ++i) {
      parent[static_cast<size_t>(c[i])] = p;
      depth[static_cast<size_t>(c[i])] = depth[static_cast<size_t>(p)] + 1;
      stack.push_back(c[i]);
    }
  }
  int me = positionOf(tree, rank, n);
  int pp = parent[static_cast<size_t>(me)];
  node.parent = pp < 0 ? -1 : rankAt(tree, pp, n);
  node.depth = depth[static_cast<size_t>(me)];
  int c[2];
  node.nchildren = childPositions(me, n, c);
  for (int i = 0; i < node.nchildren; ++i) node.children[i] = rankAt(tree, c[i], n);
  return node;
}

std::vector<int> algorithmPeers(int rank, int n) {
  std::vector<int> peers;
  if (n <= 1) return peers;
  peers.push_back((rank + 1) % n);
  peers.push_back((rank - 1 + n) % n);
  for (int t = 0; t < 2; ++t) {
    TreeNode node = treeNode(t, rank, n);
    if (node.parent >= 0) peers.push_back(node.parent);
    for (int i = 0; i < node.nchildren; ++i) peers.push_back(node.children[i]);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace ringside::reference::detail
