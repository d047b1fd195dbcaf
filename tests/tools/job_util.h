// job_util.h: a trace loaded for a test as the commands load it (tools/job),
// its cap inferred, freed at the end of the scope.
#pragma once

#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "tools/engine/replay.h"
#include "tools/job/job.h"
}

struct LoadedJob {
    ga_job_t job = {};
    std::string error; // why loading failed, "" when it did not
    bool ok = false;
    explicit LoadedJob(const std::string &path, uint64_t device_memory = 0, ga_format_t format = GA_FORMAT_AUTO,
                       bool no_seed = false)
    {
        ga_job_opts_t o = {};
        o.format = format;
        o.device_memory = device_memory;
        o.no_seed = no_seed;
        char err[1024] = "";
        ok = ga_job_add(&job, path.c_str(), &o, err, sizeof err) == 0;
        error = err;
        if (ok)
            ga_replay_infer_caps(&job, nullptr, false);
    }
    ~LoadedJob() { ga_job_free(&job); }
    LoadedJob(const LoadedJob &) = delete;
    LoadedJob &operator=(const LoadedJob &) = delete;
    size_t units() const { return job.n_units; }
    const ga_job_unit_t *unit(size_t i = 0) const { return i < job.n_units ? &job.units[i] : nullptr; }
};
