// `inferdesk-cli --version`: the project version, the commit the build was configured from, and
// the backends this build offers.
#pragma once

#include <string>

namespace inferdesk::cli {

std::string version_text();

}  // namespace inferdesk::cli
