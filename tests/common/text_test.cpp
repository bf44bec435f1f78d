// Checks of user text: host names as mpirun and ssh must get them.
#include "harness/common/text.h"

#include <gtest/gtest.h>

#include <string>

namespace harness {
namespace {

TEST(HostName, LettersDigitsAndInnerHyphensInLabelsOfUpTo63) {
  for (const std::string& good : {std::string("a"), std::string("node-01"), std::string("10.1.2.3"),
                                  std::string("Compute7.cluster.example.org"), std::string(63, 'x') + ".y"}) {
    EXPECT_TRUE(is_host_name(good)) << good;
  }
  for (const std::string& bad : {std::string(""), std::string("a;b"), std::string("a\nb"), std::string("n\xc3\xb6" "de"),
                                 std::string(300, 'a'), std::string("-oProxyCommand=id"), std::string("a-"),
                                 std::string("a..b"), std::string("a."), std::string(".a"), std::string(64, 'x'),
                                 std::string("a_b"), std::string("a b"), std::string("a:2"), std::string("[::1]")}) {
    EXPECT_FALSE(is_host_name(bad)) << bad;
  }
  // 253 characters in all, not one more.
  std::string name;
  while (name.size() + 64 <= 253) name += std::string(63, 'a') + ".";
  name += std::string(253 - name.size(), 'b');
  EXPECT_TRUE(is_host_name(name));
  EXPECT_FALSE(is_host_name(name + "b"));
}

}  // namespace
}  // namespace harness
