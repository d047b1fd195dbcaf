/*
 * gen.h: the entry points of `galloc gen` and `galloc budget`, called by
 * tools/command.c's dispatcher.
 *
 * argv[0] is the command's own name ("gen", "budget"), argv[1..argc) its
 * arguments, as a git-style subcommand sees them. Output goes to stdout (or
 * -o FILE), diagnostics to stderr prefixed "galloc gen: " / "galloc budget: ".
 * Return value: the process exit status, as galloc replay's: gen 0 written,
 * 2 bad usage or output not written; budget 0 every configuration fits, 1 an
 * OOM in some configuration, 2 bad usage or input (a configuration the
 * allocator refuses included) or a simulation error.
 */
#ifndef GA_TOOLS_GEN_GEN_H
#define GA_TOOLS_GEN_GEN_H

#ifdef __cplusplus
extern "C" {
#endif

/* galloc gen transformer --params N --layers L --d-model D --seq-len S --batch B [...]:
 * write the training trace of a decoder-only transformer in galloc's text
 * trace format (docs/trace-format.md). --help prints the flags and the model. */
int ga_gen_main(int argc, char **argv);

/* galloc budget --params N --layers L --d-model D --seq-len S --batch B [...]:
 * the analytic memory budget and the simulated peak reserved memory per
 * allocator configuration (--conf, repeatable), as text or --json. */
int ga_budget_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_GEN_GEN_H */
