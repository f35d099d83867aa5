// sinew/comm/communicator_spec.hpp: what a communicator must provide to the distribution strategies.
//
// Contract. A communicator C connects the size() processes of one job; every operation works on float spans
// (the model's flat parameter and gradient buffers, or slices of them).
//   c.rank(), c.size()              this process, 0 <= rank() < size(), and the number of processes. Constant.
//   c.send(data, peer, tag)         blocking: returns once `data` may be reused. 0 <= peer < size().
//   c.recv(data, peer, tag)         blocking: fills exactly data.size() floats from the message `peer` sent
//                                   with `tag`; a longer message is a comm_error.
//   c.isend(data, peer, tag)        non-blocking send/receive: return a request r (movable, see
//   c.irecv(data, peer, tag)        req::comm_request); `data` must stay alive and untouched until r.wait()
//                                   returned or r.test() returned true. Messages between one pair of ranks
//                                   with one tag are received in the order they were sent (MPI's
//                                   non-overtaking rule), which is what lets the ring pipeline use one tag.
//   c.allreduce_sum(data)           blocking, in place, collective: afterwards every rank holds the element-wise
//                                   sum over all ranks. data.size() must be the same on every rank.
//   c.iallreduce_sum(data)          the same, non-blocking: returns a request; the sum is in `data` once the
//                                   request completes.
//   c.broadcast(data, root)         collective: every rank's `data` becomes root's.
//   c.barrier()                     collective: returns once every rank has entered it.
//   c.abort(code, message)          prints `message` (naming this rank) and ends every process of the job
//                                   with exit code `code`. Does not return.
// Optional (req::has_probe_any; dist::ParameterServer needs it):
//   c.probe_any(tag) -> int        blocks until a message with `tag` from any rank can be received and returns
//                                  that rank (MPI_Probe with MPI_ANY_SOURCE); the message stays to be recv'd.
//   c.iprobe_any(tag) -> int       the same without blocking: -1 when no such message has come (MPI_Iprobe);
//                                  the parameter server's watchdog polls with it.
// Optional (req::has_hosts; dist::RingAllReduce sizes its messages by it, assuming one host without it):
//   c.hosts() -> int                the number of hosts the processes run on (groups sharing memory). Constant.
// Optional (req::has_host_share; Trainer splits the host's cores by it, as one rank alone without it):
//   c.host_share() -> HostShare     which of the ranks on this host with the same CPU set this one is, and how
//                                   many there are (core/affinity.hpp). Constant.
// Optional (req::has_shared_window; dist::RingAllReduce sums through it when every rank is on one host):
//   c.shared_window(bytes) -> W     collective over all ranks, which must share one host (hosts() == 1): every
//                                   rank gets `bytes` of memory the others can read and write, zeroed;
//                                   w.base(rank) -> std::byte* is rank's part (64-byte aligned). Freeing W is
//                                   collective too, except while an exception unwinds (the job is ending).
// Optional (req::has_host_split; RingTransport::hierarchical needs it, with has_shared_window):
//   c.host_split(k) -> HostSplit<C> collective: `local`, the ranks of this one's host (by rank, one host, so
//                                   with a shared window), and `across`, the ranks that hold this one's place
//                                   (local rank) on every host (by host). k > 0 groups every k consecutive ranks
//                                   as one "host" instead (trying the hierarchy on one machine). Every host must
//                                   hold as many ranks, else comm_error.
// Optional (req::has_shrink; the all-reduce strategies' `elastic` option needs it):
//   C::fault_tolerance_missing()    empty when the communicator can go on after a rank dies, else why not (a
//     -> std::string                sentence the option refuses with).
//   c.shrink(lost) -> C             collective over the survivors after an operation threw sinew::rank_lost:
//                                   a communicator of the ranks still alive (renumbered in order); `lost`
//                                   (std::vector<int>&) gets the dead ranks' numbers in c.
// Collectives must be called by every rank in the same order. Failures throw sinew::comm_error naming the
// operation and the peer. Counts are ints in MPI, so one call moves at most INT_MAX floats.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/core/affinity.hpp"

namespace sinew {

namespace comm {
/// What host_split returns (see the contract above): two communicators whose ranks are renumbered from 0.
template <class C>
struct HostSplit {
  C local;   ///< the ranks of this rank's host, by rank
  C across;  ///< one rank per host, each at this rank's place on its host, by host
};
}  // namespace comm

namespace req {
/// A pending non-blocking operation: wait() blocks until it completed, test() says whether it has.
template <class R>
concept comm_request = std::movable<R> && requires(R& r) {
  { r.wait() };
  { r.test() } -> std::convertible_to<bool>;
};
template <class C>
concept has_comm_topology = requires(const C& c) {
  { c.rank() } -> std::convertible_to<int>;
  { c.size() } -> std::convertible_to<int>;
};
template <class C>
concept has_blocking_point_to_point = requires(C& c, std::span<float> out, std::span<const float> in, int peer) {
  { c.send(in, peer, peer) };
  { c.recv(out, peer, peer) };
};
template <class C>
concept has_nonblocking_point_to_point = requires(C& c, std::span<float> out, std::span<const float> in, int peer) {
  { c.isend(in, peer, peer) } -> comm_request;
  { c.irecv(out, peer, peer) } -> comm_request;
};
template <class C>
concept has_allreduce_sum = requires(C& c, std::span<float> data) {
  { c.allreduce_sum(data) };
  { c.iallreduce_sum(data) } -> comm_request;
};
template <class C>
concept has_broadcast = requires(C& c, std::span<float> data, int root) {
  { c.broadcast(data, root) };
};
template <class C>
concept has_barrier_and_abort = requires(C& c, int code, std::string_view message) {
  { c.barrier() };
  { c.abort(code, message) };
};
/// Optional: receiving from whichever rank sent first (asynchronous parameter servers need it).
template <class C>
concept has_probe_any = requires(C& c, int tag) {
  { c.probe_any(tag) } -> std::convertible_to<int>;
  { c.iprobe_any(tag) } -> std::convertible_to<int>;
};
/// Optional: where the processes run (the ring all-reduce sizes its messages for a network by it).
template <class C>
concept has_hosts = requires(const C& c) {
  { c.hosts() } -> std::convertible_to<int>;
};
/// Optional: memory the ranks of one host share (the ring all-reduce's single-copy path).
template <class C>
concept has_shared_window = requires(C& c, std::size_t bytes) {
  { c.shared_window(bytes).base(0) } -> std::same_as<std::byte*>;
};
/// Optional: the ranks of this one's host and this one's peers on the others (the hierarchical all-reduce).
template <class C>
concept has_host_split = requires(C& c) {
  { c.host_split(0) } -> std::same_as<comm::HostSplit<C>>;
};
/// Optional: going on without ranks that died (the strategies' elastic option).
template <class C>
concept has_shrink = requires(C& c, std::vector<int>& lost) {
  { C::fault_tolerance_missing() } -> std::convertible_to<std::string>;
  { c.shrink(lost) } -> std::same_as<C>;
};
/// Optional: which ranks share this one's cores (the trainer gives each its share of them).
template <class C>
concept has_host_share = requires(const C& c) {
  { c.host_share() } -> std::convertible_to<HostShare>;
};
}  // namespace req

/// A communicator policy (the template parameter of dist::RingAllReduce, dist::MpiAllReduce ...).
template <class C>
concept CommunicatorPolicy = req::has_comm_topology<C> && req::has_blocking_point_to_point<C> &&
                       req::has_nonblocking_point_to_point<C> && req::has_allreduce_sum<C> &&
                       req::has_broadcast<C> && req::has_barrier_and_abort<C>;

namespace comm::example {
/// The smallest communicator: a job of one process. Collectives have nothing to combine; there is no peer
/// to talk to, so point-to-point calls may not happen (a strategy never makes them with one rank).
struct single_process {
  struct request {
    void wait() {}
    bool test() { return true; }
  };
  int rank() const { return 0; }
  int size() const { return 1; }
  void send(std::span<const float>, int, int) {}
  void recv(std::span<float>, int, int) {}
  request isend(std::span<const float>, int, int) { return {}; }
  request irecv(std::span<float>, int, int) { return {}; }
  void allreduce_sum(std::span<float>) {}
  request iallreduce_sum(std::span<float>) { return {}; }
  void broadcast(std::span<float>, int) {}
  void barrier() {}
  int probe_any(int) { return 0; }
  int iprobe_any(int) { return -1; }
  [[noreturn]] void abort(int, std::string_view) { std::abort(); }
};
static_assert(CommunicatorPolicy<single_process> && req::has_probe_any<single_process>);
}  // namespace comm::example

}  // namespace sinew
