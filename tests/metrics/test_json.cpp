// metrics/json.hpp: save_json writes a report that reads back as written (key order, nulls for NaN) and names
// the file it cannot write.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sinew/metrics/json.hpp"

namespace {
using sinew::metrics::Json;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(json, save_keeps_insertion_order_and_writes_nan_as_null) {
  auto j = Json::object();
  j["net"] = "lenet5";
  j["batch"] = 42;
  j["ratio"] = 2.5;
  j["nan"] = std::nan("");
  j["phases"] = Json::object({{"load", 0.25}});
  j["list"] = Json::array({1, "a\"b"});
  j["file"] = std::string("caf\xe9.bin");  // Latin-1, not UTF-8: replaced, the report is still written
  const auto path = std::filesystem::temp_directory_path() / "sinew_test_json_save.json";
  sinew::metrics::save_json(j, path.string());
  const Json back = Json::parse(slurp(path));
  std::filesystem::remove(path);
  std::vector<std::string> keys;
  for (const auto& [k, v] : back.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"net", "batch", "ratio", "nan", "phases", "list", "file"}));
  EXPECT_EQ(back["batch"].get<int>(), 42);
  EXPECT_TRUE(back["nan"].is_null());
  EXPECT_EQ(back["list"][1].get<std::string>(), "a\"b");
  EXPECT_EQ(back["file"].get<std::string>(), "caf\xef\xbf\xbd.bin");
}

TEST(json, save_names_the_file_it_cannot_write) {
  try {
    sinew::metrics::save_json(Json::object(), "/nonexistent-dir/out.json");
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/out.json"), std::string::npos) << e.what();
  }
}

}  // namespace
