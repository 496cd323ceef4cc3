// --results: the directory GNU parallel names for a job's values.
#pragma once

#include <string>
#include <vector>

#include "command_template.hpp"

namespace poolrun {

/// --results: GNU parallel's directory for `args` under `base`:
/// `base/1/value/2/value...` with `\`, tab, NUL and `/` escaped; with
/// --header, the fields' `names` instead of their numbers, in name order.
std::string results_dir_for(const std::string& base, const arguments& args,
                            const std::vector<std::string>& names = {});

} // namespace poolrun
