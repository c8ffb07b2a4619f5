// env_flag.h - the engine's on/off switches from the environment (CAPTIONIST_NO_MMAP, ...).
#pragma once

#include <cstdlib>
#include <string>

namespace captionist {

// True when `name` is set to anything but "" or "0".
inline bool env_flag(const char * name) {
    const char * v = std::getenv(name);
    return v && *v && std::string(v) != "0";
}

} // namespace captionist
