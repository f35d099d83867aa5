// sinew/data/tar_shards.hpp: images in WebDataset-layout tar shards, a ShardSource for ShardLoader.
//
//   shards/shard-000000.tar: 000000.jpg 000000.cls 000001.png 000001.cls ...
//   shards/shard-000001.tar: ...
//
// A sample is the run of members that share a key, WebDataset's rule: the member's path up to the first dot of
// its file name ("train/n01/abc.jpg" has key "train/n01/abc"). Its image is KEY.jpg, KEY.jpeg or KEY.png (told by
// content, image_file.hpp), its class KEY.cls as decimal text; other members (KEY.json ...) are passed over. The
// tars are those Python's tarfile and GNU tar write (detail/tar_reader.hpp); scripts/pack-shards packs an
// ImageFolder-layout folder into them.
//
// Construction reads every shard once, headers and .cls members only (image data are seeked over, one small
// read per sample): it counts each shard's samples and checks that each has an image and a class in
// [0, num_classes). open(s) then reads
// shard s front to back with large buffered reads, and decode() decodes a sample and fits it to one size as an
// ImageFolder does (ImageFolderOptions: resized whole, or torchvision's RandomResizedCrop drawn from
// (seed, epoch, index)).
//
// Bad input is named by shard and member: a truncated or corrupt shard, a sample with no image or no .cls, a
// class out of range fail the constructor; an image that does not decode fails decode(). With
// image.skip_bad_files the constructor instead leaves such samples out and counts them (skipped()), as
// ImageFolder does with its files: it then also decodes every image once, and of a truncated shard it keeps
// the samples before the cut.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/data/detail/tar_reader.hpp"
#include "sinew/data/image_file.hpp"
#include "sinew/data/image_folder.hpp"
#include "sinew/data/shard_source_spec.hpp"

namespace sinew::data {

/// How TarShards reads its shards.
struct TarShardsOptions {
  /// labels lie in [0, num_classes); shards do not list their classes, so give their number (> 0)
  int num_classes = 0;
  /// the size samples are fitted to, random_resized_crop, skip_bad_files: as an ImageFolder's
  ImageFolderOptions image = {};
};

namespace detail {

/// The members of one sample, as a shard holds them one after another.
struct member_group {
  std::string key, image_name;
  std::vector<std::uint8_t> image, cls;
  bool has_image = false, has_cls = false;
};

/// Reads a shard sample by sample: the runs of members sharing a key.
class group_reader {
 public:
  /// Reads images too when `read_images`, else seeks over them: then a small buffer, so that each seek reads
  /// only the next header and .cls instead of a large block of image data.
  group_reader(const std::filesystem::path& path, std::string shown, bool read_images)
      : tar_(path, std::move(shown), read_images ? std::size_t{1} << 20 : std::size_t{2048}),
        read_images_(read_images) {}

  /// The next sample's members; false after the last.
  bool next(member_group& g) {
    g.key.clear(), g.image_name.clear(), g.image.clear(), g.cls.clear();
    g.has_image = g.has_cls = false;
    for (;;) {
      tar_member m;
      if (has_pending_) {
        m = std::move(pending_), has_pending_ = false;
      } else if (!tar_.next(m)) {
        return !g.key.empty();
      }
      const std::size_t base = m.name.rfind('/') == std::string::npos ? 0 : m.name.rfind('/') + 1;
      const std::size_t dot = m.name.find('.', base);
      std::string key = m.name.substr(0, dot), extension = dot == std::string::npos ? "" : m.name.substr(dot + 1);
      for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (g.key.empty()) {
        g.key = std::move(key);
      } else if (key != g.key) {
        pending_ = std::move(m), has_pending_ = true;  // the next sample's first member, its data still unread
        return true;
      }
      if (extension == "jpg" || extension == "jpeg" || extension == "png") {
        if (read_images_) tar_.read(g.image);
        g.has_image = true;
        g.image_name = m.name;
      } else if (extension == "cls") {
        tar_.read(g.cls);
        g.has_cls = true;
      }
    }
  }

  const std::string& shown() const { return tar_.shown(); }

 private:
  tar_reader tar_;
  bool read_images_;
  tar_member pending_;
  bool has_pending_ = false;
};

}  // namespace detail

/// Images in WebDataset-layout tar shards, a ShardSource (see the top of this file).
class TarShards {
  // What the constructor found of one shard.
  struct shard {
    std::filesystem::path path;
    std::string shown;                  // its file name, in messages
    std::size_t first = 0;              // the index of its first sample among all shards'
    std::size_t count = 0;              // samples handed out
    std::size_t groups = 0;             // samples read, counting those left out; a truncated shard's whole ones
    std::vector<std::size_t> left_out;  // which of them skip_bad_files left out, ascending
  };

 public:
  /// Every `*.tar` file directly in `dir`, in the order of their names (shard-000000.tar, shard-000001.tar ...).
  TarShards(const std::filesystem::path& dir, TarShardsOptions options)
      : TarShards(list_tars(dir), std::move(options)) {}

  /// The given shard files, in this order. Reads their headers and classes (see the top of this file).
  TarShards(std::vector<std::filesystem::path> files, TarShardsOptions options) : options_(std::move(options)) {
    check_fit_options(options_.image, "tar shards");
    if (options_.num_classes <= 0)
      throw data_error("tar shards: num_classes is " + std::to_string(options_.num_classes) +
                       "; give the number of classes (shards do not list them)");
    if (files.empty()) throw data_error("tar shards: no shard files given");
    std::size_t first = 0;
    for (auto& path : files) {
      shard s{std::move(path), {}, first, 0, 0, {}};
      s.shown = s.path.filename().string();
      index(s);
      first += s.count;
      shards_.push_back(std::move(s));
    }
    size_ = first;
    if (size_ == 0)
      throw data_error("tar shards: the " + std::to_string(shards_.size()) + " shards (" + shards_[0].shown +
                       " ...) hold no samples" +
                       (skipped_ > 0 ? " that read (" + std::to_string(skipped_) + " skipped as bad)" : "") +
                       "; a sample is KEY.jpg or KEY.png with KEY.cls");
  }

  /// The ShardSource contract: 3 channels (decoded as RGB), the fitted size, the classes given, the samples.
  /// @{
  int channels() const { return 3; }
  int height() const { return options_.image.height; }
  int width() const { return options_.image.width; }
  int num_classes() const { return options_.num_classes; }
  std::size_t size() const { return size_; }
  std::size_t shards() const { return shards_.size(); }
  std::size_t shard_size(std::size_t shard) const { return shards_.at(shard).count; }
  /// @}

  /// Shard s's file.
  const std::filesystem::path& shard_path(std::size_t shard) const { return shards_.at(shard).path; }
  /// Samples (or shard tails) left out by skip_bad_files, and their messages, one each.
  /// @{
  std::size_t skipped() const { return skipped_; }
  const std::vector<std::string>& skipped_messages() const { return skipped_messages_; }
  /// @}

  /// Reads one shard front to back (ShardSource contract), leaving out what the constructor left out.
  class cursor {
   public:
    /// Fills `sample` with the shard's next sample and returns true; false after the last.
    bool next(ShardSample& sample) {
      while (ordinal_ < shard_->groups) {
        if (!groups_.next(group_))
          throw data_error("tar shards: " + shard_->shown + " ends after " + std::to_string(ordinal_) +
                           " samples, it had " + std::to_string(shard_->groups) + " when indexed (changed since?)");
        const std::size_t ordinal = ordinal_++;
        if (left_out_ != shard_->left_out.end() && *left_out_ == ordinal) {
          ++left_out_;
          continue;
        }
        const std::string problem = owner_->problem(*shard_, group_);
        if (!problem.empty()) throw data_error(problem + " (changed since it was indexed?)");
        sample.index = shard_->first + delivered_++;
        sample.name = shard_->shown + ": " + group_.image_name;
        sample.bytes.swap(group_.image);
        sample.label = static_cast<std::int32_t>(label_of(group_.cls));
        return true;
      }
      return false;
    }

   private:
    friend class TarShards;
    cursor(const TarShards& owner, const TarShards::shard& s)
        : owner_(&owner), shard_(&s), groups_(s.path, s.shown, true), left_out_(s.left_out.begin()) {}
    const TarShards* owner_;
    const TarShards::shard* shard_;
    detail::group_reader groups_;
    detail::member_group group_;
    std::vector<std::size_t>::const_iterator left_out_;
    std::size_t ordinal_ = 0, delivered_ = 0;
  };

  /// A cursor on shard `shard` (ShardSource contract).
  cursor open(std::size_t shard) const {
    if (shard >= shards_.size())
      throw data_error("tar shards: shard " + std::to_string(shard) + " asked of " + std::to_string(shards_.size()));
    return cursor(*this, shards_[shard]);
  }

  /// Decodes `sample` and fits it to height() x width() as epoch `epoch` sees it (ShardSource contract).
  std::int32_t decode(const ShardSample& sample, std::span<std::uint8_t> pixels, int epoch) const {
    const std::size_t expected = 3 * static_cast<std::size_t>(height()) * static_cast<std::size_t>(width());
    if (pixels.size() != expected)
      throw shape_error("tar shards: decode() got room for " + std::to_string(pixels.size()) +
                        " bytes, an image is " + std::to_string(expected));
    fit_image(decode_image(sample.bytes, sample.name), options_.image, epoch, sample.index, pixels);
    return sample.label;
  }

 private:
  static std::vector<std::filesystem::path> list_tars(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      throw data_error("tar shards: " + dir.string() + " is not a directory (give the folder holding the " +
                       "shard-NNNNNN.tar files, or the files themselves)");
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().extension() == ".tar") found.push_back(entry.path());
    std::sort(found.begin(), found.end());
    if (found.empty())
      throw data_error("tar shards: " + dir.string() + " holds no .tar files (scripts/pack-shards packs an image " +
                       "folder into shards)");
    return found;
  }

  // The class a .cls member holds: decimal text, blanks around it allowed; -1 if it is not a number.
  static long long label_of(const std::vector<std::uint8_t>& text) {
    std::size_t i = 0, end = text.size();
    while (i < end && std::isspace(text[i])) ++i;
    while (end > i && std::isspace(text[end - 1])) --end;
    if (i == end || end - i > 9) return -1;
    long long value = 0;
    for (; i < end; ++i) {
      if (text[i] < '0' || text[i] > '9') return -1;
      value = value * 10 + (text[i] - '0');
    }
    return value;
  }

  // What is wrong with a sample as read (its image not yet decoded); empty if nothing.
  std::string problem(const shard& s, const detail::member_group& g) const {
    const std::string where = "tar shards: " + s.shown + ": sample " + g.key;
    if (!g.has_image) return where + " has no image (" + g.key + ".jpg, .jpeg or .png; pack it again)";
    if (!g.has_cls) return where + " has no " + g.key + ".cls (its class as decimal text; pack it again)";
    const long long label = label_of(g.cls);
    if (label < 0)
      return where + ": " + g.key + ".cls holds \"" +
             std::string(g.cls.begin(), g.cls.begin() + std::min<std::ptrdiff_t>(std::ssize(g.cls), 20)) +
             "\", not a class number";
    if (label >= options_.num_classes)
      return where + ": " + g.key + ".cls says class " + std::to_string(label) + ", outside [0, " +
             std::to_string(options_.num_classes) + ") (raise num_classes, or fix the label)";
    return {};
  }

  // Counts shard s's samples and checks each (see the top of this file).
  void index(shard& s) {
    const bool skip = options_.image.skip_bad_files;
    detail::group_reader groups(s.path, s.shown, skip);  // decode every image only when skipping bad ones
    detail::member_group g;
    std::size_t ordinal = 0;
    try {
      for (; groups.next(g); ++ordinal) {
        std::string bad = problem(s, g);
        if (bad.empty() && skip) {
          try {
            decode_image(g.image, s.shown + ": " + g.image_name);
          } catch (const data_error& e) {
            bad = e.what();
          }
        }
        if (bad.empty()) {
          ++s.count;
        } else if (skip) {
          s.left_out.push_back(ordinal);
          ++skipped_;
          skipped_messages_.push_back(std::move(bad));
        } else {
          throw data_error(bad);
        }
      }
    } catch (const data_error& e) {
      if (!skip) throw;
      ++skipped_;  // a truncated or corrupt shard: the samples before the damage stay
      skipped_messages_.push_back(e.what());
    }
    s.groups = ordinal;
  }

  TarShardsOptions options_;
  std::vector<shard> shards_;
  std::size_t size_ = 0;
  std::size_t skipped_ = 0;
  std::vector<std::string> skipped_messages_;
};

static_assert(ShardSource<TarShards>);

}  // namespace sinew::data
