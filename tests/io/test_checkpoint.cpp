// Checkpoints in one process (dist::Local): a resumed run ends bit for bit where the run that was not stopped
// ends; another configuration, a corrupt file or a truncated manifest is refused with a sentence naming it and
// changes nothing; a writer killed (SIGKILL) at any stage of save_checkpoint leaves a loadable checkpoint; and
// repeated runs with one seed are bitwise identical (the determinism dist::Local promises); a preemption signal
// saves the run after the step and throws sinew::preempted (Trainer::set_preemption).
#include <gtest/gtest.h>

#include "../support/resume.hpp"
#include "../support/tar_files.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/data.hpp"
#include "sinew/io/checkpoint.hpp"
#include "sinew/optim/adam.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
namespace fs = std::filesystem;

// BatchNorm (running statistics), Dropout (masks from the seed and the model's step) and momentum or Adam
// moments: every piece of state a resume must restore changes the result if it is lost.
using Net = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, BatchNorm2d, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh,
                       Dropout<25>, Dense<2>>;
using SgdTrainer = Trainer<Net, backend::OneDnn, dist::Local, Sync, optim::Sgd>;
using AdamTrainer = Trainer<Net, backend::OneDnn, dist::Local, Sync, optim::Adam>;
constexpr TrainerOptions kOptions{.threads = 1, .seed = 11, .warmup_steps = 0};

data::CachedLoader loader(std::uint64_t seed = 4) {
  return test::corners_loader(test::corners(96, 1), {.batch_size = 16, .seed = seed});  // 6 batches an epoch
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("sinew-test-checkpoint-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

using test::bitwise_equal;
using test::state_of;

template <class T, class O>
void expect_resume_is_exact(const O& optimizer, const std::string& name) {
  const fs::path dir = fresh_dir(name);
  auto data = loader();
  // Not stopped: 4 steps, then an epoch, then 3 steps (train_steps ends an epoch after its steps).
  T whole(kOptions, optimizer);
  whole.train_steps(data, 4);
  whole.train_epoch(data);
  whole.train_steps(data, 3);
  // Stopped after step 4 and after the epoch, each time resumed by a new trainer.
  {
    T first(kOptions, optimizer);
    first.train_steps(data, 4);
    first.save_checkpoint(dir);
  }
  {
    T second(kOptions, optimizer);
    second.resume(dir);
    EXPECT_EQ(second.steps_done(), 4);
    second.train_epoch(data);
    second.save_checkpoint(dir);  // replaces the first checkpoint
  }
  T third(kOptions, optimizer);
  third.resume(dir);
  EXPECT_EQ(third.steps_done(), 10);
  third.train_steps(data, 3);
  EXPECT_TRUE(bitwise_equal(state_of(whole), state_of(third))) << "the resumed run differs from the one not stopped";
  // Only the last checkpoint's files are left: the manifest, the model and one rank file (beside this run's lock).
  EXPECT_EQ(std::count_if(fs::directory_iterator(dir), fs::directory_iterator{},
                          [](const fs::directory_entry& e) {
                            return e.path().filename() != io::lock_file_name(0);
                          }),
            3);
  EXPECT_TRUE(fs::exists(dir / io::lock_file_name(0)));
  fs::remove_all(dir);
}

TEST(checkpoint, local_sgd_momentum_resume_is_bitwise_exact) {
  expect_resume_is_exact<SgdTrainer>(optim::Sgd::options{.lr = 0.05f, .momentum = 0.9f}, "sgd");
}

TEST(checkpoint, local_adam_resume_is_bitwise_exact) {
  expect_resume_is_exact<AdamTrainer>(optim::Adam::options{.lr = 3e-3f}, "adam");
}

struct stop_here {};

// Saved from the step callback in the middle of an epoch: the resumed trainer trains the rest of that epoch.
TEST(checkpoint, local_saved_mid_epoch_resumes_the_rest_of_the_epoch_exactly) {
  const fs::path dir = fresh_dir("mid-epoch");
  auto data = loader();
  const optim::Sgd::options sgd{.lr = 0.05f, .momentum = 0.9f};
  SgdTrainer whole(kOptions, sgd);
  whole.train_epoch(data);
  whole.train_epoch(data);
  {
    SgdTrainer stopped(kOptions, sgd);
    stopped.set_step_callback([&](const StepInfo& s) {
      if (s.steps_done == 8) {  // step 2 of epoch 1
        stopped.save_checkpoint(dir);
        throw stop_here{};
      }
    });
    stopped.train_epoch(data);
    EXPECT_THROW(stopped.train_epoch(data), stop_here);
  }
  SgdTrainer resumed(kOptions, sgd);
  resumed.resume(dir);
  EXPECT_EQ(io::read_manifest(dir).batches_done, 2u);
  EXPECT_EQ(resumed.epochs_done(), 1);
  const EpochStats rest = resumed.train_epoch(data);
  EXPECT_EQ(rest.steps, 4u);
  EXPECT_EQ(resumed.epochs_done(), 2);
  EXPECT_TRUE(bitwise_equal(state_of(whole), state_of(resumed)));
  fs::remove_all(dir);
}

// Tar shards streamed by workers (StreamingLoader<TarShards>, random resized crops, a shuffle buffer), saved
// mid-epoch: the resumed trainer passes over the batches trained and reads the very batches the run not stopped
// read, so its weights are bitwise the same.
TEST(checkpoint, tar_shards_saved_mid_epoch_resume_the_same_batches_exactly) {
  using ShardNet = Sequential<Input<3, 6, 6>, Conv2d<4, 3>, ReLU, Flatten, Dense<3>>;
  using ShardLoader = data::StreamingLoader<data::TarShards>;
  using ShardTrainer = Trainer<ShardNet, backend::OneDnn, dist::Local, Sync, optim::Sgd, ShardLoader>;
  const fs::path dir = fresh_dir("tar-shards"), shards = fresh_dir("tar-shards-data");
  fs::create_directories(shards);
  test::write_png_shards(shards, 8, 3, 8);  // 24 samples of 8x8, cropped to 6x6: 6 batches of 4
  const auto make_loader = [&] {
    data::TarShardsOptions o{.num_classes = 3};
    o.image = {.height = 6, .width = 6, .random_resized_crop = true, .seed = 2};
    const data::LoaderOptions lo{.batch_size = 4, .seed = 5, .random_horizontal_flip = true};
    return std::make_unique<ShardLoader>(data::TarShards(shards, o), lo,
                                         data::StreamingOptions{.workers = 2, .shuffle_buffer = 5});
  };
  const optim::Sgd::options sgd{.lr = 0.05f, .momentum = 0.9f};
  ShardTrainer whole(kOptions, sgd);
  auto data = make_loader();
  whole.train_epoch(*data);
  whole.train_epoch(*data);
  {
    ShardTrainer stopped(kOptions, sgd);
    auto mine = make_loader();
    stopped.set_step_callback([&](const StepInfo& s) {
      if (s.steps_done == 8) {  // step 2 of epoch 1
        stopped.save_checkpoint(dir);
        throw stop_here{};
      }
    });
    stopped.train_epoch(*mine);
    EXPECT_THROW(stopped.train_epoch(*mine), stop_here);
  }
  ShardTrainer resumed(kOptions, sgd);
  resumed.resume(dir);
  EXPECT_EQ(io::read_manifest(dir).batches_done, 2u);
  auto fresh = make_loader();
  const EpochStats rest = resumed.train_epoch(*fresh);
  EXPECT_EQ(rest.steps, 4u);
  EXPECT_TRUE(bitwise_equal(state_of(whole), state_of(resumed)));
  fs::remove_all(dir);
  fs::remove_all(shards);
}

TEST(checkpoint, weights_load_as_a_state_dict_and_the_manifest_names_the_trainer) {
  const fs::path dir = fresh_dir("state-dict");
  auto data = loader();
  SgdTrainer trainer(kOptions, {.lr = 0.05f});
  trainer.train_steps(data, 2);
  trainer.save_checkpoint(dir);
  const io::CheckpointManifest m = io::read_manifest(dir);
  EXPECT_EQ(m.trainer_type(), SgdTrainer::type_name());
  EXPECT_NE(m.trainer_type().find("OneDnn, Local, Sync, Sgd>"), std::string::npos) << m.trainer_type();
  EXPECT_EQ(m.step, 2u);
  EXPECT_EQ(m.epoch, 1u);
  EXPECT_EQ(m.batch_size, 16u);
  EXPECT_EQ(m.shuffle_seed, 4u);
  // The model file is a plain state_dict (conv.weight, running_mean, num_batches_tracked ...).
  backend::OneDnn::context ctx;
  Model<Net, backend::OneDnn> copy(ctx, {.seed = 99});
  io::load_safetensors(copy, dir / io::model_file_name(m.generation));
  EXPECT_TRUE(std::equal(copy.parameters().begin(), copy.parameters().end(), trainer.model().parameters().begin()));
  EXPECT_EQ(copy.step(), trainer.model().step());
  fs::remove_all(dir);
}

// A net's string literal arguments (Named<"fc", ...>, Module<"layer1", ...>) read as text in the manifest and in
// every sentence that quotes the trainer's type, and a manifest written with GCC's raw form (older sinew) reads the
// same.
TEST(checkpoint, the_manifest_writes_named_layers_as_text) {
  using Labelled = Sequential<Input<1, 4, 4>, Flatten, Named<"fc", Dense<3>>, Named<"", ReLU>>;
  const std::string name = io::type_part_name<Labelled>();
  EXPECT_NE(name.find("Named<\"fc\",Dense<3,true>>"), std::string::npos) << name;
  EXPECT_NE(name.find("Named<\"\",ReLU>"), std::string::npos) << name;
  EXPECT_EQ(name.find("(char)"), std::string::npos) << name;
  EXPECT_EQ(io::readable_type_name("Named<fixed_string<6ul>{char[6]{(char)99,(char)111,(char)110,(char)118,(char)49,"
                                   "(char)0}},Conv2d<8,3>>"),
            "Named<\"conv1\",Conv2d<8,3>>");
  EXPECT_EQ(io::readable_type_name("Named<fixed_string<3ul>{char[3]{(char)102,(char)99}},X>"), "Named<\"fc\",X>");
  EXPECT_EQ(io::readable_type_name("Module<fixed_string<1ul>{},X>"), "Module<\"\",X>");
  // Not a literal of that form: left as it is.
  EXPECT_EQ(io::readable_type_name("fixed_string<3ul>{weird}"), "fixed_string<3ul>{weird}");
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(checkpoint, another_configuration_a_corrupt_file_or_a_truncated_manifest_is_refused_and_changes_nothing) {
  const fs::path dir = fresh_dir("refused");
  auto data = loader();
  {
    SgdTrainer trainer(kOptions, {.lr = 0.05f});
    trainer.train_steps(data, 2);
    trainer.save_checkpoint(dir);
  }
  AdamTrainer adam(kOptions, {});
  const std::vector<float> before = state_of(adam);
  std::string m = message_of([&] { adam.resume(dir); });
  EXPECT_NE(m.find("was written by Trainer<"), std::string::npos) << m;
  EXPECT_NE(m.find("Sgd>; this trainer is Trainer<"), std::string::npos) << m;
  EXPECT_NE(m.find(": the optimizer differs"), std::string::npos) << m;
  EXPECT_TRUE(bitwise_equal(before, state_of(adam)));

  SgdTrainer other_seed({.threads = 1, .seed = 12}, {.lr = 0.05f});
  m = message_of([&] { other_seed.resume(dir); });
  EXPECT_NE(m.find("TrainerOptions::seed 11; this trainer has 12"), std::string::npos) << m;

  // A loader with another shuffle seed than the saved run's is refused at the next epoch.
  SgdTrainer resumed(kOptions, {.lr = 0.05f});
  resumed.resume(dir);
  auto other_order = loader(5);
  m = message_of([&] { resumed.train_epoch(other_order); });
  EXPECT_NE(m.find("saved training with shuffle seed 4, this loader's is 5"), std::string::npos) << m;

  const io::CheckpointManifest manifest = io::read_manifest(dir);
  const fs::path rank_file = dir / io::rank_file_name(0, manifest.generation);
  {  // one flipped byte in the rank file
    std::fstream f(rank_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  SgdTrainer fresh(kOptions, {.lr = 0.05f});
  const std::vector<float> fresh_before = state_of(fresh);
  m = message_of([&] { fresh.resume(dir); });
  EXPECT_NE(m.find(rank_file.string() + " is corrupt"), std::string::npos) << m;
  EXPECT_TRUE(bitwise_equal(fresh_before, state_of(fresh)));

  fs::resize_file(dir / io::kManifestName, 40);  // a truncated manifest
  m = message_of([&] { fresh.resume(dir); });
  EXPECT_NE(m.find((dir / io::kManifestName).string() + " is not a valid checkpoint manifest"), std::string::npos) << m;
  EXPECT_TRUE(bitwise_equal(fresh_before, state_of(fresh)));
  fs::remove_all(dir);
}

// A child process saves checkpoint after checkpoint, each with the parameters set to its number; it is killed
// (SIGKILL) at a stage of save_checkpoint, or after a random delay. Whatever the moment, the directory must
// hold a whole checkpoint: the last one completed, or the one being written if its manifest was renamed.
int kill_while_saving(const fs::path& dir, const std::string& stage, int kill_at_save, int delay_us) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(30);  // a hook that never fires must not hang the test
    if (!stage.empty()) {
      static int saves = 0;
      static std::string kill_stage;
      saves = 0, kill_stage = stage;
      io::detail::checkpoint_fault_hook = [kill_at_save](std::string_view s) {
        if (s == "cleaned") ++saves;
        if (s == kill_stage && saves == kill_at_save) ::raise(SIGKILL);
      };
    }
    SgdTrainer trainer({.threads = 1, .seed = 11}, {.lr = 0.05f});
    for (int i = 1;; ++i) {
      std::fill(trainer.model().parameters().begin(), trainer.model().parameters().end(), float(i));
      trainer.save_checkpoint(dir);
    }
  }
  if (stage.empty()) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    ::kill(child, SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

float loaded_value(const fs::path& dir) {
  SgdTrainer t({.threads = 1, .seed = 11}, {.lr = 0.05f});
  t.resume(dir);
  // Every parameter the state_dict holds (the flat buffer's padding between layers is not saved).
  const auto p = t.model().parameters();
  for (const StateEntry& e : state_dict_entries<Net>()) {
    if (!e.is_parameter()) continue;
    EXPECT_TRUE(std::all_of(p.begin() + e.offset, p.begin() + e.offset + e.size(), [&](float x) { return x == p[0]; }))
        << "a mix of two checkpoints in " << e.key;
  }
  return p[0];
}

TEST(checkpoint, a_writer_killed_at_any_stage_leaves_a_loadable_checkpoint) {
  const fs::path dir = fresh_dir("killed");
  // At each stage of the third save: saves 1 and 2 are complete, so 2 must load, or 3 once its manifest is in.
  const std::pair<const char*, float> stages[] = {{"rank file written", 2.0f}, {"rank file renamed", 2.0f},
                                                  {"files written", 2.0f},     {"manifest written", 2.0f},
                                                  {"manifest renamed", 3.0f}};
  for (const auto& [stage, expected] : stages) {
    fs::remove_all(dir);
    const int status = kill_while_saving(dir, stage, 2, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << stage;
    EXPECT_EQ(loaded_value(dir), expected) << "killed at '" << stage << "'";
  }
  // Then at random moments of a save loop (the first checkpoint is written within a few milliseconds).
  std::mt19937 rng(7);
  fs::remove_all(dir);
  for (int i = 0; i < 4; ++i) {
    kill_while_saving(dir, "", 0, 40000 + int(rng() % 30000));
    if (fs::exists(dir / io::kManifestName)) {
      EXPECT_GT(loaded_value(dir), 0.0f) << "kill " << i;
    }
  }
  fs::remove_all(dir);
}

// dist::Local's determinism: the same seed gives the same bits, run after run, on one thread count. (Across
// thread counts oneDNN may split a reduction differently, so results may differ in the last bits.)
TEST(checkpoint, local_runs_with_one_seed_are_bitwise_identical) {
  auto data = loader();
  std::vector<float> runs[2];
  for (auto& run : runs) {
    SgdTrainer t(kOptions, {.lr = 0.05f, .momentum = 0.9f});
    t.train_steps(data, 8);
    run = state_of(t);
  }
  EXPECT_TRUE(bitwise_equal(runs[0], runs[1]));
}

}  // namespace

// The format without a trainer: a RunState (io/run_state.hpp) written by io::save_run comes back through
// io::load_run into fresh storage, every section's tensors, counts and keys included; a key that differs
// refuses the checkpoint and writes nothing.
TEST(checkpoint, a_run_state_round_trips_through_save_run_and_load_run) {
  const fs::path dir = fresh_dir("run-state");
  std::vector<float> params(Net::kParamSpan), buffers(Net::kBufferSpan), moments(40), residual(7);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (auto* v : {&moments, &residual})
    for (float& x : *v) x = value(gen);
  // The model file holds the state_dict's tensors: the floats between them (alignment) stay zero.
  for (const StateEntry& e : state_dict_entries<Net>())
    if (e.source != StateSource::batches_tracked)
      for (float& x : std::span<float>(e.is_parameter() ? params : buffers).subspan(e.offset, e.size())) x = value(gen);
  const auto make = [](std::vector<float>& p, std::vector<float>& b, std::vector<float>& m, std::vector<float>& r,
                       std::uint64_t key) {
    io::RunState run;
    run.type = {{"network", "Net"}, {"backend", "OneDnn"}, {"strategy", "Local"}, {"sync_mode", "Sync"},
                {"optimizer", "Adam"}};
    run.network_layout = "layout";
    run.seed = 9;
    run.parameters = p, run.buffers = b;
    run.sections.emplace_back("optimizer.", NamedState{{{"exp_avg", m}}, {{"steps", 0}}, {}});
    run.sections.emplace_back("", NamedState{{{"compressor.residual", r}}, {}, {{"shard.begin", key}}});
    return run;
  };
  io::RunState saved = make(params, buffers, moments, residual, 12);
  saved.step = 17, saved.epoch = 2, saved.batches_done = 3, saved.model_step = 17;
  saved.loader = {16, 6, 4};
  saved.sections[0].second.counts[0].second = 17;
  io::save_run<Net>(dir, {}, saved);

  std::vector<float> p(params.size()), b(buffers.size()), m(moments.size()), r(residual.size());
  io::RunState wrong_key = make(p, b, m, r, 13);
  EXPECT_THROW(io::load_run<Net>(dir, {}, wrong_key), data_error);
  EXPECT_EQ(p, std::vector<float>(params.size())) << "a refused load wrote the parameters";
  EXPECT_EQ(r, std::vector<float>(residual.size())) << "a refused load wrote a section";

  io::RunState loaded = make(p, b, m, r, 12);
  EXPECT_EQ(io::load_run<Net>(dir, {}, loaded), "") << "on as many ranks the run continues as saved";
  EXPECT_EQ(p, params);
  EXPECT_EQ(b, buffers);
  EXPECT_EQ(m, moments);
  EXPECT_EQ(r, residual);
  EXPECT_EQ(loaded.step, 17u);
  EXPECT_EQ(loaded.epoch, 2u);
  EXPECT_EQ(loaded.batches_done, 3u);
  EXPECT_EQ(loaded.model_step, 17u);
  EXPECT_EQ(loaded.loader.batch_size, 16u);
  EXPECT_EQ(loaded.loader.batches_per_epoch, 6u);
  EXPECT_EQ(loaded.loader.shuffle_seed, std::optional<std::uint64_t>(4));
  EXPECT_EQ(loaded.section("optimizer.")->count("steps"), 17u);
  fs::remove_all(dir);
}

// One writer per checkpoint directory (io/directory_lock.hpp). A child process takes the lock and holds it
// until told; the parent (another run) must be refused with a sentence naming the child, then take the lock
// once the child ended normally (no note) or was killed (a note naming it).
namespace {

struct LockHolder {
  pid_t pid = -1;
  int release_fd = -1;  // closing it tells the child to release and exit
};

LockHolder hold_lock_in_child(const fs::path& dir) {
  int ready[2], release[2];
  if (::pipe(ready) != 0 || ::pipe(release) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]), ::close(release[1]);
    try {
      io::lock_directory(dir, 0);
    } catch (...) {
      ::_exit(3);
    }
    const char ok = 'x';
    if (::write(ready[1], &ok, 1) != 1) ::_exit(4);
    char c;
    while (::read(release[0], &c, 1) > 0) {
    }
    io::release_directory(dir);  // as a run that ends normally
    ::_exit(0);
  }
  ::close(ready[1]), ::close(release[0]);
  char c = 0;
  EXPECT_EQ(::read(ready[0], &c, 1), 1) << "the child could not take the lock";
  ::close(ready[0]);
  return {pid, release[1]};
}

}  // namespace

TEST(directory_lock, a_second_run_is_refused_with_a_sentence_naming_the_first_and_writes_nothing) {
  const fs::path dir = fresh_dir("lock-busy");
  fs::create_directories(dir);
  const LockHolder child = hold_lock_in_child(dir);
  try {
    io::lock_directory(dir, 0);
    ADD_FAILURE() << "a second process took a held lock";
  } catch (const error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("is in use by another run"), std::string::npos) << message;
    EXPECT_NE(message.find("pid " + std::to_string(child.pid)), std::string::npos) << message;
    EXPECT_NE(message.find("save to another directory"), std::string::npos) << message;
  }
  // Through a trainer: save_checkpoint and resume refuse alike, and the save leaves no file behind.
  {
    SgdTrainer trainer(kOptions, {.lr = 0.05f});
    EXPECT_THROW(trainer.save_checkpoint(dir), error);
    EXPECT_FALSE(fs::exists(dir / io::kManifestName));
    EXPECT_THROW(trainer.resume(dir), error);
  }
  // A lock of another rank is another file: rank 1 of this run is not refused by rank 0 of the other.
  EXPECT_EQ(io::lock_directory(dir, 1), "");
  io::release_directory(dir);
  ::close(child.release_fd);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The first run ended normally: its lock is free and names nobody.
  EXPECT_EQ(io::lock_directory(dir, 0), "");
  SgdTrainer trainer(kOptions, {.lr = 0.05f});
  trainer.save_checkpoint(dir);
  EXPECT_TRUE(fs::exists(dir / io::kManifestName));
  io::release_directory(dir);
  fs::remove_all(dir);
}

TEST(directory_lock, a_lock_left_by_a_killed_run_is_taken_over_with_a_note) {
  const fs::path dir = fresh_dir("lock-stale");
  fs::create_directories(dir);
  const LockHolder child = hold_lock_in_child(dir);
  ::kill(child.pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  ::close(child.release_fd);
  const std::string note = io::lock_directory(dir, 0);
  EXPECT_NE(note.find("from a run that has ended"), std::string::npos) << note;
  EXPECT_NE(note.find("pid " + std::to_string(child.pid)), std::string::npos) << note;
  // Taken once, held: asking again in the same process is no takeover.
  EXPECT_EQ(io::lock_directory(dir, 0), "");
  io::release_directory(dir);
  fs::remove_all(dir);
}

TEST(directory_lock, the_trainers_of_one_process_share_its_locks) {
  const fs::path dir = fresh_dir("lock-shared");
  auto data = loader();
  SgdTrainer first(kOptions, {.lr = 0.05f});
  first.train_steps(data, 2);
  first.save_checkpoint(dir);
  SgdTrainer second(kOptions, {.lr = 0.05f});
  EXPECT_EQ(second.resume(dir), "");  // the first trainer still lives, in this process: one run
  second.save_checkpoint(dir);
  io::release_directory(dir);
  // Released, another process may take it.
  const LockHolder child = hold_lock_in_child(dir);
  ::close(child.release_fd);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  fs::remove_all(dir);
}

// A run that accumulated k batches a step (TrainerOptions::accumulate) continues on other ranks only at a
// step's first batch: the samples the saved workers dealt must be a whole number of the new workers' steps.
TEST(checkpoint, on_other_ranks_an_accumulating_run_continues_only_at_a_whole_step) {
  io::CheckpointManifest m;
  m.world_size = 3, m.step = 7, m.epoch = 1, m.batches_done = 2, m.batch_size = 8;
  using position = std::pair<std::uint64_t, std::uint64_t>;  // epoch, batches done
  const auto resumed_at = [&](std::uint64_t accumulate) {
    m.accumulate = accumulate;
    io::RunState run;
    run.accumulate = accumulate;
    run.ranks = {0, 2, 2};
    EXPECT_NE(io::detail::continue_position(m, run), "");
    return position{run.epoch, run.batches_done};
  };
  // 3 workers dealt 2 x 8 x 3 = 48 samples: 3 batches of 2 workers x 8, but 1.5 steps of 2 such batches.
  EXPECT_EQ(resumed_at(1), (position{1, 3}));
  EXPECT_EQ(resumed_at(2), (position{2, 0})) << "half a step is not continued: the next epoch starts";
  m.batches_done = 4;  // 96 samples: 3 steps of 2 batches on 2 workers
  EXPECT_EQ(resumed_at(2), (position{1, 6}));
}

// Preemption (Trainer::set_preemption, core/preemption.hpp) in one process: a signal in the middle of an epoch
// ends training after that step with the run saved and sinew::preempted thrown; a second signal while the run
// saves (from the writer's fault hook) changes nothing, where the signal's default action would end the test;
// the resumed run ends bit for bit where the run that was not stopped ends.
TEST(preemption, a_signal_mid_epoch_saves_after_the_step_and_the_resumed_run_is_exact) {
  const fs::path dir = fresh_dir("preempted");
  auto data = loader();
  const optim::Sgd::options sgd{.lr = 0.05f, .momentum = 0.9f};
  SgdTrainer whole(kOptions, sgd);
  whole.train_epoch(data);
  whole.train_epoch(data);
  std::string what;
  int status = 0;
  {
    SgdTrainer stopped(kOptions, sgd);
    stopped.set_preemption({.directory = dir, .signals = {SIGUSR2}});
    stopped.set_step_callback([](const StepInfo& s) {
      if (s.steps_done == 8) ::raise(SIGUSR2);  // step 2 of epoch 1
    });
    io::detail::checkpoint_fault_hook = [](std::string_view stage) {
      if (stage == "rank file written") ::raise(SIGUSR2);
    };
    stopped.train_epoch(data);
    try {
      stopped.train_epoch(data);
    } catch (const preempted& p) {
      what = p.what(), status = p.exit_status();
    }
    io::detail::checkpoint_fault_hook = nullptr;
    EXPECT_EQ(stopped.steps_done(), 8);
  }
  EXPECT_EQ(status, 75);
  EXPECT_NE(what.find("preempted by SIGUSR2 (caught on rank 0) at epoch 1, step 8; the run is saved in " +
                      dir.string()),
            std::string::npos)
      << what;
  EXPECT_EQ(pending_preemption_signal(), 0) << "the signal that came while saving is taken with the first";
  ::signal(SIGUSR2, SIG_DFL);  // the handler stays after a preemption (until the process exits): not here
  comm::clear_leaving();
  SgdTrainer resumed(kOptions, sgd);
  resumed.resume(dir);
  EXPECT_EQ(io::read_manifest(dir).batches_done, 2u);
  resumed.train_epoch(data);
  EXPECT_TRUE(bitwise_equal(state_of(whole), state_of(resumed)));
  fs::remove_all(dir);
}

// A signal before the first step saves the untrained run at the next train_epoch's start; an empty directory
// turns preemption off and puts the previous handler back; SIGKILL cannot be caught, and says so.
TEST(preemption, before_the_first_step_off_again_and_an_uncatchable_signal) {
  const fs::path dir = fresh_dir("preempted-early");
  auto data = loader();
  const auto handler = [](int number) {
    struct sigaction now;
    ::sigaction(number, nullptr, &now);
    return now.sa_handler;
  };
  {
    SgdTrainer t(kOptions, {.lr = 0.05f});
    t.set_preemption({.directory = dir});  // SIGTERM and SIGUSR1
    EXPECT_EQ(handler(SIGTERM), &sinew::detail::note_preemption_signal);
    ::raise(SIGTERM);
    EXPECT_THROW(t.train_epoch(data), preempted);
    EXPECT_EQ(t.steps_done(), 0);
    EXPECT_EQ(io::read_manifest(dir).step, 0u);
  }
  ::signal(SIGTERM, SIG_DFL), ::signal(SIGUSR1, SIG_DFL);
  comm::clear_leaving();
  SgdTrainer t(kOptions, {.lr = 0.05f});
  t.set_preemption({.directory = dir, .signals = {SIGUSR2}});
  EXPECT_EQ(handler(SIGUSR2), &sinew::detail::note_preemption_signal);
  t.set_preemption({});
  EXPECT_EQ(handler(SIGUSR2), SIG_DFL) << "turned off, preemption puts the previous handler back";
  const std::string refused = message_of([&] { t.set_preemption({.directory = dir, .signals = {SIGKILL}}); });
  EXPECT_NE(refused.find("preemption: cannot catch signal 9 (SIGKILL and SIGSTOP cannot be caught"),
            std::string::npos)
      << refused;
  EXPECT_EQ(t.train_epoch(data).steps, 6u) << "a refused set_preemption leaves preemption off";
  fs::remove_all(dir);
}
