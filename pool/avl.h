/*
 * avl.h: an intrusive AVL tree with parent links, for the pool's ordered sets:
 * the blocks of one size class inside a free-block index (sizeidx.h), and the
 * unmapped expandable ranges (blockpool.c). Best fit needs lower_bound, and
 * release walks in order both ways.
 *
 * Intrusive: the node lives inside the caller's record, so insert and remove
 * allocate nothing (the hot path allocates nothing). Every operation is
 * O(log n); next/prev are O(1) amortized over a walk.
 *
 * Two interfaces over the same nodes:
 *   - ga_avl_t with a comparator (cold paths and tests): insert descends
 *     through cmp, the tree counts its nodes;
 *   - a bare root pointer (the free-block index, where a tree is one word per
 *     size class): the caller descends with its own inline comparison and
 *     links the node with ga_pool_avl_link (the Linux rbtree model:
 *     rb_link_node + rb_insert_color), so no function pointer is called on
 *     the hot path; ga_pool_avl_erase removes.
 *
 * Locking: none; the owner's lock covers the tree.
 */
#ifndef GA_AVL_H
#define GA_AVL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ga_avl_node {
    struct ga_avl_node *left, *right, *parent; /* children and parent; NULL at the edges */
    int height;                                /* 1 for a leaf */
} ga_avl_node_t;

/* cmp(a, b) < 0 when a orders before b; == 0 only for the same key. */
typedef int (*ga_avl_cmp_fn)(const ga_avl_node_t *a, const ga_avl_node_t *b);

typedef struct ga_avl {
    ga_avl_node_t *root; /* NULL when empty */
    ga_avl_cmp_fn cmp;   /* the order of the keys */
    size_t count;        /* nodes in the tree */
} ga_avl_t;

void ga_pool_avl_init(ga_avl_t *t, ga_avl_cmp_fn cmp);
/* Insert n (its key must not be in the tree already). */
void ga_pool_avl_insert(ga_avl_t *t, ga_avl_node_t *n);
/* Remove n, which must be in t. */
void ga_pool_avl_remove(ga_avl_t *t, ga_avl_node_t *n);
/* The first node not ordered before key (std::set::lower_bound), or NULL. */
ga_avl_node_t *ga_pool_avl_lower_bound(const ga_avl_t *t, const ga_avl_node_t *key);
ga_avl_node_t *ga_pool_avl_first(const ga_avl_t *t);
ga_avl_node_t *ga_pool_avl_next(const ga_avl_node_t *n);
ga_avl_node_t *ga_pool_avl_prev(const ga_avl_node_t *n);
/* The tree is well formed: parent links, exact heights, balance within one,
 * children in order, count. O(n), recursive to the tree's height; for the
 * invariant check. */
bool ga_pool_avl_check(const ga_avl_t *t);

/* Bare-root interface. */

/* Restore heights and balance from n up (after a link); out of line. */
void ga_pool_avl_rebalance(ga_avl_node_t **root, ga_avl_node_t *n);

/* Put n at *link, a NULL child slot of parent (or the root slot, parent NULL)
 * that the caller's descent ended on, and rebalance. A node linked into an
 * empty tree, or beside a sibling (its parent's height does not change),
 * touches nothing else. */
static inline void ga_pool_avl_link(ga_avl_node_t **root, ga_avl_node_t *parent, ga_avl_node_t **link, ga_avl_node_t *n)
{
    n->left = n->right = NULL;
    n->parent = parent;
    n->height = 1;
    *link = n;
    if (parent != NULL && (parent->left == NULL || parent->right == NULL))
        ga_pool_avl_rebalance(root, parent);
}

/* Remove n from the tree at *root (out of line; see ga_pool_avl_erase). */
void ga_pool_avl_erase_slow(ga_avl_node_t **root, ga_avl_node_t *n);

/* Remove n from the tree at *root. The only node of a tree goes in three
 * loads and a store: the free-block index's trees are mostly that. */
static inline void ga_pool_avl_erase(ga_avl_node_t **root, ga_avl_node_t *n)
{
    if (*root == n && n->left == NULL && n->right == NULL)
        *root = NULL;
    else
        ga_pool_avl_erase_slow(root, n);
}

/* Leftmost / rightmost node under n (n != NULL). */
static inline ga_avl_node_t *ga_pool_avl_leftmost(ga_avl_node_t *n)
{
    while (n->left != NULL)
        n = n->left;
    return n;
}

static inline ga_avl_node_t *ga_pool_avl_rightmost(ga_avl_node_t *n)
{
    while (n->right != NULL)
        n = n->right;
    return n;
}

/* The subtree at root is a well-formed AVL tree under cmp whose root has no
 * parent; *count gets its nodes. O(n); for the invariant check. */
bool ga_pool_avl_check_root(const ga_avl_node_t *root, ga_avl_cmp_fn cmp, size_t *count);

#endif /* GA_AVL_H */
