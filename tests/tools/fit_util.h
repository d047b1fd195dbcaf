// fit_util.h: a galloc fit job for a test: the traces loaded as the command
// loads them (job_util.h) and the fit's derived fields set.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/tools/job_util.h"

extern "C" {
#include "tools/fit/fit.h"
}

struct FitJob {
    ga_job_t loaded = {};
    ga_fit_job_t job = {};
    std::string error;
    bool ok = false;
    FitJob(const std::vector<std::string> &paths, uint64_t device_memory = 0, uint64_t reserve = 0)
    {
        ga_job_opts_t o = {};
        o.device_memory = device_memory;
        o.reserve = reserve;
        char err[1024] = "";
        ok = true;
        for (const std::string &p : paths)
            if (ok && ga_job_add(&loaded, p.c_str(), &o, err, sizeof err) != 0) {
                ok = false;
                error = err;
            }
        ga_replay_infer_caps(&loaded, nullptr, false);
        job.job = &loaded;
        job.reserve = reserve;
        ga_fit_job_init(&job);
    }
    explicit FitJob(const std::string &path, uint64_t device_memory = 0)
        : FitJob(std::vector<std::string>{path}, device_memory)
    {}
    ~FitJob() { ga_job_free(&loaded); }
    FitJob(const FitJob &) = delete;
    FitJob &operator=(const FitJob &) = delete;
};
