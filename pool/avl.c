/*
 * avl.c: intrusive AVL tree (see avl.h). Balance is restored bottom-up from
 * the changed node with at most one single or double rotation per level.
 * Every structural change works on a root slot (ga_avl_node_t **), so a tree
 * can be a ga_avl_t or a bare pointer in an array of size classes.
 */
#include "pool/avl.h"

static int height(const ga_avl_node_t *n)
{
    return n ? n->height : 0;
}

static void fix_height(ga_avl_node_t *n)
{
    int hl = height(n->left), hr = height(n->right);
    n->height = (hl > hr ? hl : hr) + 1;
}

void ga_pool_avl_init(ga_avl_t *t, ga_avl_cmp_fn cmp)
{
    t->root = NULL;
    t->cmp = cmp;
    t->count = 0;
}

/* Point whatever referenced old (its parent or the root) at new. */
static void replace_child(ga_avl_node_t **root, ga_avl_node_t *parent, ga_avl_node_t *old, ga_avl_node_t *new_)
{
    if (parent == NULL)
        *root = new_;
    else if (parent->left == old)
        parent->left = new_;
    else
        parent->right = new_;
    if (new_ != NULL)
        new_->parent = parent;
}

static ga_avl_node_t *rotate_left(ga_avl_node_t **t, ga_avl_node_t *x)
{
    ga_avl_node_t *y = x->right;
    replace_child(t, x->parent, x, y);
    x->right = y->left;
    if (y->left)
        y->left->parent = x;
    y->left = x;
    x->parent = y;
    fix_height(x);
    fix_height(y);
    return y;
}

static ga_avl_node_t *rotate_right(ga_avl_node_t **t, ga_avl_node_t *x)
{
    ga_avl_node_t *y = x->left;
    replace_child(t, x->parent, x, y);
    x->left = y->right;
    if (y->right)
        y->right->parent = x;
    y->right = x;
    x->parent = y;
    fix_height(x);
    fix_height(y);
    return y;
}

/* Walk from n towards the root restoring heights and balance. A subtree
 * that comes out as high as it went in (rotated or not) changes nothing
 * above it, so the walk stops there: most inserts and removes touch a level
 * or two instead of the whole path (the replay profile spent a fifth of its
 * time here before). */
void ga_pool_avl_rebalance(ga_avl_node_t **t, ga_avl_node_t *n)
{
    while (n != NULL) {
        int before = n->height;
        fix_height(n);
        int bal = height(n->left) - height(n->right);
        if (bal > 1) {
            if (height(n->left->left) < height(n->left->right))
                rotate_left(t, n->left);
            n = rotate_right(t, n);
        } else if (bal < -1) {
            if (height(n->right->right) < height(n->right->left))
                rotate_right(t, n->right);
            n = rotate_left(t, n);
        }
        if (n->height == before)
            return;
        n = n->parent;
    }
}

void ga_pool_avl_insert(ga_avl_t *t, ga_avl_node_t *n)
{
    ga_avl_node_t *parent = NULL, **link = &t->root;
    while (*link != NULL) {
        parent = *link;
        link = t->cmp(n, parent) < 0 ? &parent->left : &parent->right;
    }
    ga_pool_avl_link(&t->root, parent, link, n);
    t->count++;
}

void ga_pool_avl_erase_slow(ga_avl_node_t **root, ga_avl_node_t *n)
{
    ga_avl_node_t *fix;
    if (n->left != NULL && n->right != NULL) {
        /* Put n's in-order successor s (leftmost of the right subtree) in n's place. */
        ga_avl_node_t *s = n->right;
        while (s->left != NULL)
            s = s->left;
        if (s->parent != n) {
            fix = s->parent;
            replace_child(root, s->parent, s, s->right);
            s->right = n->right;
            s->right->parent = s;
        } else {
            fix = s;
        }
        replace_child(root, n->parent, n, s);
        s->left = n->left;
        s->left->parent = s;
        s->height = n->height;
    } else {
        fix = n->parent;
        replace_child(root, n->parent, n, n->left ? n->left : n->right);
    }
    ga_pool_avl_rebalance(root, fix);
}

void ga_pool_avl_remove(ga_avl_t *t, ga_avl_node_t *n)
{
    ga_pool_avl_erase_slow(&t->root, n);
    n->left = n->right = n->parent = NULL;
    t->count--;
}

ga_avl_node_t *ga_pool_avl_lower_bound(const ga_avl_t *t, const ga_avl_node_t *key)
{
    ga_avl_node_t *n = t->root, *best = NULL;
    while (n != NULL) {
        if (t->cmp(n, key) < 0) {
            n = n->right;
        } else {
            best = n;
            n = n->left;
        }
    }
    return best;
}

ga_avl_node_t *ga_pool_avl_first(const ga_avl_t *t)
{
    ga_avl_node_t *n = t->root;
    if (n != NULL)
        while (n->left != NULL)
            n = n->left;
    return n;
}

ga_avl_node_t *ga_pool_avl_next(const ga_avl_node_t *n)
{
    if (n->right != NULL) {
        n = n->right;
        while (n->left != NULL)
            n = n->left;
        return (ga_avl_node_t *)n;
    }
    while (n->parent != NULL && n->parent->right == n)
        n = n->parent;
    return n->parent;
}

ga_avl_node_t *ga_pool_avl_prev(const ga_avl_node_t *n)
{
    if (n->left != NULL) {
        n = n->left;
        while (n->right != NULL)
            n = n->right;
        return (ga_avl_node_t *)n;
    }
    while (n->parent != NULL && n->parent->left == n)
        n = n->parent;
    return n->parent;
}

/* Height of the subtree at n if it is a valid AVL subtree (links, heights,
 * balance, order), else -1; counts its nodes into *count. */
static int check_subtree(ga_avl_cmp_fn cmp, const ga_avl_node_t *n, const ga_avl_node_t *parent, size_t *count)
{
    if (n == NULL)
        return 0;
    if (n->parent != parent)
        return -1;
    if ((n->left != NULL && cmp(n->left, n) >= 0) || (n->right != NULL && cmp(n, n->right) >= 0))
        return -1;
    int hl = check_subtree(cmp, n->left, n, count), hr = check_subtree(cmp, n->right, n, count);
    if (hl < 0 || hr < 0 || hl - hr > 1 || hr - hl > 1)
        return -1;
    int h = (hl > hr ? hl : hr) + 1;
    if (n->height != h)
        return -1;
    (*count)++;
    return h;
}

bool ga_pool_avl_check_root(const ga_avl_node_t *root, ga_avl_cmp_fn cmp, size_t *count)
{
    *count = 0;
    return check_subtree(cmp, root, NULL, count) >= 0;
}

bool ga_pool_avl_check(const ga_avl_t *t)
{
    size_t count;
    return ga_pool_avl_check_root(t->root, t->cmp, &count) && count == t->count;
}
