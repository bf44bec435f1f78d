// Checks of user text: host names as mpirun and ssh must get them, comma-separated options.
#include "harness/common/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/common/errors.h"

namespace harness {
namespace {

TEST(HostName, LettersDigitsAndInnerHyphensInLabelsOfUpTo63) {
  for (const std::string& good : {std::string("a"), std::string("node-01"), std::string("10.1.2.3"),
                                  std::string("Compute7.cluster.example.org"), std::string(63, 'x') + ".y"}) {
    EXPECT_TRUE(is_host_name(good)) << good;
  }
  for (const std::string& bad :
       {std::string(""), std::string("a;b"), std::string("a\nb"),
        std::string("n\xc3\xb6"
                    "de"),
        std::string(300, 'a'), std::string("-oProxyCommand=id"), std::string("a-"), std::string("a..b"),
        std::string("a."), std::string(".a"), std::string(64, 'x'), std::string("a b"), std::string("a:2"),
        std::string("[::1]"), std::string("node_01")}) {
    EXPECT_FALSE(is_host_name(bad)) << bad;
  }
  // 253 characters in all, not one more.
  std::string name;
  while (name.size() + 64 <= 253) name += std::string(63, 'a') + ".";
  name += std::string(253 - name.size(), 'b');
  EXPECT_TRUE(is_host_name(name));
  EXPECT_FALSE(is_host_name(name + "b"));
}

std::string list_error(const std::string& list) {
  try {
    split_comma_list(list, "--ranks");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(CommaList, EmptyItemsAreTyposNotSkipped) {
  EXPECT_EQ(split_comma_list("1,2,8", "--ranks"), (std::vector<std::string>{"1", "2", "8"}));
  EXPECT_EQ(split_comma_list("busbw", "--metrics"), (std::vector<std::string>{"busbw"}));
  EXPECT_EQ(list_error("1,,2"), "--ranks \"1,,2\": expected items separated by single commas, got an empty item 2");
  EXPECT_NE(list_error(",1"), "");
  EXPECT_NE(list_error("1,"), "");
  EXPECT_NE(list_error(""), "");
  EXPECT_NE(list_error(","), "");
}

}  // namespace
}  // namespace harness
