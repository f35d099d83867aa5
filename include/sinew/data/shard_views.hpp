// sinew/data/shard_views.hpp: the stages of a sharded input pipeline, as range-v3 views.
//
//   shard order  data::views::shard_deal: this rank's shards of an epoch (a seeded shuffle of the shards, dealt
//                out in turn: rank r of W takes positions r, r + W, ...)
//   read         data::views::shard_samples: the dealt shards' samples, each shard read front to back (input)
//   shuffle      data::views::shuffle_buffer(n, seed): a seeded shuffle within a window of n samples, as
//                WebDataset's shuffle(n): a sample leaves at most n places early
//   decode, augment, batch  ranges::views::transform(source.decode ...), ranges::views::chunk(batch)
//
// StreamingLoader over a ShardSource composes these very stages and runs decode and augment on its worker
// threads; docs/guide.md shows a pipeline of one's own composed the same way. Every stage is fixed by (seed,
// epoch, rank): the same three give the same samples in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <range/v3/view/facade.hpp>
#include <range/v3/view/for_each.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>
#include <range/v3/view/view.hpp>
#include <utility>
#include <vector>

#include "sinew/data/shard_source_spec.hpp"
#include "sinew/data/shuffle.hpp"

namespace sinew::data::views {

/// The shards rank `rank` of `world` reads in `epoch`: positions rank, rank + world, ... of the permutation of
/// (seed, epoch) of the `shards` shards (of 0, 1, ... unshuffled).
inline std::vector<std::size_t> shard_deal(std::size_t shards, std::uint64_t seed, int epoch, int rank, int world,
                                           bool shuffle = true) {
  std::vector<std::size_t> order(shards);
  if (shuffle)
    order = epoch_permutation(shards, seed, epoch);
  else
    std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<std::size_t> dealt;
  for (std::size_t i = static_cast<std::size_t>(rank); i < shards; i += static_cast<std::size_t>(world))
    dealt.push_back(order[i]);
  return dealt;
}

/// One shard's samples, read front to back through the source's cursor: an input range of ShardSample. Its
/// copies share one position (a view must be copyable; a file being read is not).
template <ShardSource S>
class shard_samples_view : public ranges::view_facade<shard_samples_view<S>, ranges::unknown> {
 public:
  shard_samples_view() = default;
  /// Shard `shard` of `source`, which must outlive the view; nothing is read before begin().
  shard_samples_view(const S& source, std::size_t shard) : source_(&source), shard_(shard) {}

 private:
  friend ranges::range_access;
  using cursor_type = decltype(std::declval<const S&>().open(std::size_t{}));

  struct state {
    std::optional<cursor_type> cursor;
    ShardSample current;
    bool done = true;
  };

  struct cursor {
    state* at = nullptr;
    ShardSample& read() const { return at->current; }
    void next() { at->done = !at->cursor->next(at->current); }
    bool equal(ranges::default_sentinel_t) const { return at->done; }
  };

  cursor begin_cursor() {
    state_ = std::make_shared<state>();
    state_->cursor.emplace(source_->open(shard_));
    state_->done = !state_->cursor->next(state_->current);
    return {state_.get()};
  }

  const S* source_ = nullptr;
  std::size_t shard_ = 0;
  std::shared_ptr<state> state_;
};

/// The samples of the shards `deal` names, in turn and then again from the first (an endless input range: take
/// as many as an epoch has). `source` must outlive the range.
template <ShardSource S>
auto shard_samples(const S& source, std::vector<std::size_t> deal) {
  return ranges::views::iota(std::size_t{0}) |
         ranges::views::transform([deal = std::move(deal)](std::size_t k) { return deal[k % deal.size()]; }) |
         ranges::views::for_each([&source](std::size_t shard) { return shard_samples_view<S>(source, shard); });
}

/// A seeded shuffle within a window: holds up to `capacity` elements of its input and hands out one drawn at
/// random, refilling as it goes (capacity 1: the input order). An input range that moves the elements out; its
/// copies share one position.
template <class Rng>
class shuffle_buffer_view : public ranges::view_facade<shuffle_buffer_view<Rng>, ranges::unknown> {
 public:
  /// The elements' type, as the input's.
  using value_type = ranges::range_value_t<Rng>;
  shuffle_buffer_view() = default;
  /// Shuffles `base` within `capacity` elements (0 counts as 1), drawing from `rng`.
  shuffle_buffer_view(Rng base, std::size_t capacity, std::mt19937_64 rng)
      : state_(std::make_shared<state>(std::move(base), capacity == 0 ? 1 : capacity, rng)) {}

 private:
  friend ranges::range_access;

  struct state {
    state(Rng b, std::size_t c, std::mt19937_64 r) : base(std::move(b)), capacity(c), rng(r) {}
    Rng base;
    std::size_t capacity;
    std::mt19937_64 rng;
    std::optional<ranges::iterator_t<Rng>> it;
    std::vector<value_type> buffer;
    value_type current{};
    bool done = false;

    void advance() {
      while (buffer.size() < capacity && *it != ranges::end(base)) {
        buffer.push_back(std::move(**it));
        ++*it;
      }
      if (buffer.empty()) {
        done = true;
        return;
      }
      const auto pick = static_cast<std::size_t>(bounded_uniform(rng, buffer.size()));
      current = std::move(buffer[pick]);
      if (pick + 1 != buffer.size()) buffer[pick] = std::move(buffer.back());
      buffer.pop_back();
    }
  };

  struct cursor {
    state* at = nullptr;
    value_type& read() const { return at->current; }
    void next() { at->advance(); }
    bool equal(ranges::default_sentinel_t) const { return at->done; }
  };

  cursor begin_cursor() {
    state_->it.emplace(ranges::begin(state_->base));
    state_->buffer.reserve(state_->capacity);
    state_->advance();
    return {state_.get()};
  }

  std::shared_ptr<state> state_;
};

/// `input | shuffle_buffer(capacity, seed, epoch)`: the shuffle stage (see shuffle_buffer_view), drawing from
/// (seed, epoch).
inline auto shuffle_buffer(std::size_t capacity, std::uint64_t seed, int epoch) {
  return ranges::make_view_closure([capacity, rng = epoch_engine(seed ^ 0x73687566666c6562ull, epoch)](auto&& input) {
    using base = ranges::views::all_t<decltype(input)>;
    return shuffle_buffer_view<base>(ranges::views::all(std::forward<decltype(input)>(input)), capacity, rng);
  });
}

}  // namespace sinew::data::views
