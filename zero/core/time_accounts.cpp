// The time accounts of time_accounts.h: the current account and when it was last
// charged; every switch adds the time since then to the account being left.
#include "zero/core/time_accounts.h"

#include <chrono>

namespace zero::time_accounts {
namespace {

using Clock = std::chrono::steady_clock;

struct State {
  bool on = false;
  Account current = kOther;
  Clock::time_point since;
  double ms[kAccountCount] = {};
};

thread_local State state;

// Adds the time since the last switch to the current account.
void settle(Clock::time_point now) {
  state.ms[state.current] += std::chrono::duration<double, std::milli>(now - state.since).count();
  state.since = now;
}

}  // namespace

void Enable() {
  state = State{};
  state.on = true;
  state.since = Clock::now();
}

void Disable() {
  if (!state.on) return;
  settle(Clock::now());
  state.on = false;
}

bool enabled() { return state.on; }

double total_ms(Account account) {
  if (state.on) settle(Clock::now());
  return state.ms[account];
}

Charge::Charge(Account account) {
  if (!state.on) return;
  active_ = true;
  previous_ = state.current;
  if (account == previous_) return;
  settle(Clock::now());
  state.current = account;
}

Charge::~Charge() {
  if (!active_ || !state.on) return;
  if (state.current == previous_) return;
  settle(Clock::now());
  state.current = previous_;
}

}  // namespace zero::time_accounts
