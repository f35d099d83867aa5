// tests/support/address_space.hpp: a reader that allocates what a file's header promises must, when that
// allocation fails, throw a data_error naming the file rather than be killed (the data readers' tests).
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sinew/core/error.hpp"

namespace sinew::test {

/// Runs `read` in a child process (EXPECT_EXIT, so the cap stays there) with its address space capped at what it
/// uses plus `headroom` bytes. The child exits 0 only when `read` throws a sinew::data_error whose message holds
/// `phrase` (2: another message, 3: another exception, 4: none). A sanitizer reserves terabytes of address space,
/// so a test that calls this skips itself under one.
template <class Read>
void expect_data_error_under_address_cap(Read read, std::uint64_t headroom, const std::string& phrase) {
  EXPECT_EXIT(
      {
        rlimit limit{};
        getrlimit(RLIMIT_AS, &limit);
        std::ifstream status("/proc/self/statm");
        std::uint64_t pages = 0;
        status >> pages;
        limit.rlim_cur = pages * std::uint64_t(sysconf(_SC_PAGESIZE)) + headroom;
        setrlimit(RLIMIT_AS, &limit);
        try {
          read();
        } catch (const sinew::data_error& e) {
          const std::string m = e.what();
          std::_Exit(m.find(phrase) != std::string::npos ? 0 : 2);
        } catch (...) {
          std::_Exit(3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace sinew::test
