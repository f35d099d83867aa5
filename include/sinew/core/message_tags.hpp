// sinew/core/message_tags.hpp: the tag of every point-to-point message sinew sends, in one place so that no
// two protocols share one (a message of one would match a receive of the other).
//
//   comm.isend(block, right, message_tag::kRing);
//
// In core/, below comm/, because the trace's clock and gather messages (metrics/timeline.hpp) use them too and
// metrics/ does not include comm/ (docs/architecture.md). Collectives (barrier, broadcast, all-reduce) need no tag.
#pragma once

namespace sinew::message_tag {

/// the ring all-reduce's segment chunks, left neighbour to right (comm/ring_allreduce.hpp)
inline constexpr int kRing = 7301;
/// Compressed's ring all-gather of the ranks' compressed payloads (dist/compressed.hpp)
inline constexpr int kCompressedRing = 7331;
/// RingAllReduce's ring over a SyncBatchNorm2d's statistics, which may run while a gradient bucket's ring is in
/// flight on kRing (dist/ring_allreduce.hpp, sum_over_workers)
inline constexpr int kSyncBatchNorm = 7341;
/// a worker's 4-float header to a server: gradient, done or stop, and the learning rate or its place
/// (dist/parameter_server.hpp)
inline constexpr int kPushHeader = 7401;
/// the gradient slice that follows a push header
inline constexpr int kPushPayload = 7402;
/// a server's 4-float reply header to a worker: params or stop, the update's seconds and the lead
inline constexpr int kReplyHeader = 7403;
/// the parameter slice that follows a reply header
inline constexpr int kReplyPayload = 7404;
/// the watchdog's roll call: one float from each rank still alive after a collective timed out
/// (dist/detail/allreduce_common.hpp)
inline constexpr int kRollCall = 7417;
/// the trace's clock ping-pong between rank 0 and each rank (metrics/timeline.hpp, estimate_clock_offset)
inline constexpr int kTraceClock = 7523;
/// each rank's trace events to rank 0 (metrics/timeline.hpp, gather_traces)
inline constexpr int kTraceGather = 7524;

}  // namespace sinew::message_tag
