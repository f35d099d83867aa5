// sinew/dist/options.hpp: the defaults the strategies' options share, in one place.
//
//   using Strategy = sinew::dist::RingAllReduce<sinew::comm::Mpi>;
//   Strategy s({.configuration = "cifar10 batch=64", .timeout_seconds = 60});
//
// Every strategy's `options` declares the shared fields itself (configuration; timeout_seconds; for the
// all-reduce strategies bucket_bytes and overlap) rather than inheriting them from a base struct: a C++20
// designated initializer names only a struct's own members, and programs write options as above. What they
// share is their defaults, which live here (and kDefaultBucketBytes in dist/buckets.hpp).
#pragma once

namespace sinew::dist {

/// Seconds a rank waits in a collective, or for a parameter server's reply, before it aborts the job naming
/// the silent ranks (comm/failure.hpp); long enough for a slow step on a loaded host, short enough that a hung
/// job ends before anyone wonders.
inline constexpr double kDefaultTimeoutSeconds = 25;

}  // namespace sinew::dist
