// The smallest OpenAI server: the actor engine behind the Beast HTTP server, until Ctrl-C.
//
//   build/examples/example_serve_minimal [MODEL] [PORT]
//   curl localhost:8000/v1/completions -H 'Content-Type: application/json' -d '{"prompt": "Once
//   upon a time", "max_tokens": 32}'
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "actors/system/engine_system.hpp"
#include "net/http_server.hpp"

using namespace actorllm;

namespace {
volatile std::sig_atomic_t stop = 0;
}

int main(int argc, char** argv) {
  engine_config config;
  config.model.model = argc > 1 ? argv[1] : "../shared/models/stories260K";
  config.server.host = "127.0.0.1";
  config.server.port = static_cast<uint16_t>(argc > 2 ? std::atoi(argv[2]) : 8000);
  engine_system engine(config);
  net::http_server server(config.server, engine.client());
  server.start();
  std::printf("serving %s on %s\n", engine.setup().served_model_name.c_str(), server.url().c_str());
  std::signal(SIGINT, [](int) { stop = 1; });
  while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
}
