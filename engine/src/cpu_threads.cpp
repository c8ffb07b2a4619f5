// cpu_threads.cpp - how many compute threads a model gets by default.
#include <captionist/engine.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

namespace captionist {

int cpu_physical_cores() {
#if defined(__APPLE__)
    int n = 0;
    size_t len = sizeof(n);
    if (sysctlbyname("hw.perflevel0.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
    if (sysctlbyname("hw.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
#elif defined(__linux__)
    std::ifstream f("/proc/cpuinfo");
    std::set<std::string> cores;
    std::string line, phys;
    while (std::getline(f, line)) {
        if (line.rfind("physical id", 0) == 0) phys = line.substr(line.find(':') + 1);
        if (line.rfind("core id", 0) == 0) cores.insert(phys + "/" + line.substr(line.find(':') + 1));
    }
    if (!cores.empty()) return (int) cores.size();
#endif
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? (int) n : 1;
}

int default_n_threads() {
    int n = cpu_physical_cores();
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = std::min(n, std::max(1, (int) CPU_COUNT(&set)));
    // /proc/loadavg's fourth field is "runnable/total" right now; the reader is one of the runnable
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    std::ifstream f("/proc/loadavg");
    double l1 = 0, l5 = 0, l15 = 0;
    std::string running;
    if (online > 0 && f >> l1 >> l5 >> l15 >> running) {
        const size_t slash = running.find('/');
        const long runnable = slash == std::string::npos ? -1 : std::atol(running.substr(0, slash).c_str());
        if (runnable >= 1) n = std::min<long>(n, std::max<long>(1, online - (runnable - 1)));
    }
#endif
    return std::max(1, n);
}

} // namespace captionist
