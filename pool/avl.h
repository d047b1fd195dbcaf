/*
 * avl.h: an intrusive AVL tree with parent links, for the pool's ordered free
 * sets (best fit needs lower_bound, and release walks in order both ways).
 *
 * Intrusive: the node lives inside the caller's record, so insert and remove
 * allocate nothing (the hot path allocates nothing). Every operation is
 * O(log n); next/prev are O(1) amortized over a walk.
 *
 * Locking: none; the owner's lock covers the tree.
 */
#ifndef GA_AVL_H
#define GA_AVL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ga_avl_node {
    struct ga_avl_node *left, *right, *parent;
    int height; /* 1 for a leaf */
} ga_avl_node_t;

/* cmp(a, b) < 0 when a orders before b; == 0 only for the same key. */
typedef int (*ga_avl_cmp_fn)(const ga_avl_node_t *a, const ga_avl_node_t *b);

typedef struct ga_avl {
    ga_avl_node_t *root;
    ga_avl_cmp_fn cmp;
    size_t count; /* nodes in the tree */
} ga_avl_t;

void ga_pool_avl_init(ga_avl_t *t, ga_avl_cmp_fn cmp);
/* Insert n (its key must not be in the tree already). */
void ga_pool_avl_insert(ga_avl_t *t, ga_avl_node_t *n);
/* Remove n, which must be in t. */
void ga_pool_avl_remove(ga_avl_t *t, ga_avl_node_t *n);
/* The first node not ordered before key (std::set::lower_bound), or NULL. */
ga_avl_node_t *ga_pool_avl_lower_bound(const ga_avl_t *t, const ga_avl_node_t *key);
ga_avl_node_t *ga_pool_avl_first(const ga_avl_t *t);
ga_avl_node_t *ga_pool_avl_last(const ga_avl_t *t);
ga_avl_node_t *ga_pool_avl_next(const ga_avl_node_t *n);
ga_avl_node_t *ga_pool_avl_prev(const ga_avl_node_t *n);
/* The tree is well formed: parent links, exact heights, balance within one,
 * children in order, count. O(n), recursive to the tree's height; for the
 * invariant check. */
bool ga_pool_avl_check(const ga_avl_t *t);

#endif /* GA_AVL_H */
