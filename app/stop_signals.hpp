#pragma once
/// SIGINT and SIGTERM for the long-running commands (serve, worker): the first asks for a clean
/// shutdown; a shutdown is then bounded, so that whatever hangs in it (an actor that never
/// quits, a connection to a lost peer that never closes) cannot keep the process alive.
/// One such hang is known outside the project: CAF 0.17 (the version Debian ships) can
/// deadlock while waiting for the threads of detached actors at shutdown, rarely and at random
/// (actor-framework issue 1196, fixed in CAF 0.18); every actor of the engine is detached.
#include <chrono>

namespace actorllm::app {

/// Installs the handlers. From then on stop_requested() is true once a signal arrived.
void catch_stop_signals();
bool stop_requested();

/// Starts a watchdog for the shutdown that begins now: if the process still runs after
/// `limit`, or a second stop signal arrives, it says so on stderr (naming `who`) and ends the
/// process at once with status 1.
void bound_shutdown(const char* who, std::chrono::seconds limit = std::chrono::seconds(15));

}  // namespace actorllm::app
