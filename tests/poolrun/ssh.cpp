// -S/--sshlogin against real sshd servers on 127.0.0.1: slots over
// ControlMaster connections, hosts that refuse, lie or die, timeouts,
// retries, transfers and the journal across hosts.
#include "sshd_lab.hpp"

using namespace poolrun::test;

namespace {

/// poolrun with the lab's ssh and `args`.
std::vector<std::string> remote(const sshd_lab& lab,
                                std::vector<std::string> args) {
  args.insert(args.begin(), {"--ssh", lab.ssh()});
  return poolrun_argv(args);
}

std::vector<std::string> numbers(int n) {
  std::vector<std::string> out{":::"};
  for (int i = 1; i <= n; ++i)
    out.push_back(std::to_string(i));
  return out;
}

std::vector<std::string> with(std::vector<std::string> args,
                              const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// The Host column of each joblog line, by Seq.
std::map<std::string, std::string> hosts_in(const std::string& log) {
  std::map<std::string, std::string> out;
  for (auto& line : lines_of(log)) {
    auto tab = line.find('\t');
    auto host = line.substr(tab + 1, line.find('\t', tab + 1) - tab - 1);
    if (line.rfind("Seq\t", 0) != 0)
      out[line.substr(0, tab)] = host;
  }
  return out;
}

} // namespace

TEST_CASE("two hosts over ssh - 3 slots: the output of a local run - the "
          "Host column - PARALLEL_SEQ and PARALLEL_JOBSLOT remotely" *
          doctest::timeout(120)) {
  sshd_lab lab;
  auto cmd = std::string{"sleep 0.2; echo {} seq=$PARALLEL_SEQ "
                         "slot=${PARALLEL_JOBSLOT:+set}"};
  child_process run{remote(lab, with({"-S", "2/good,1/dying", "-k",
                                      "--joblog", lab.dir() / "log", cmd},
                                     numbers(9))),
                    "", lab.dir().path};
  CHECK(run.exit_code(60s) == 0);
  child_process local{poolrun_argv(with({"-k", cmd}, numbers(9))), "",
                      lab.dir().path};
  CHECK(local.exit_code(60s) == 0);
  CHECK(run.out() == local.out());
  auto hosts = hosts_in(read_file(lab.dir() / "log"));
  CHECK(hosts.size() == 9);
  std::set<std::string> used;
  for (auto& kvp : hosts)
    used.insert(kvp.second);
  CHECK(used == std::set<std::string>{"dying", "good"});
}

TEST_CASE("--slf: N/host gives N slots and : is the local machine" *
          doctest::timeout(120)) {
  sshd_lab lab;
  write_file(lab.dir() / "hosts", "# three slots behind good\n3/good\n\n1/:\n");
  // Each command holds its slot until all four have started.
  auto cmd = "echo ${SSH_CONNECTION:+remote} $PARALLEL_JOBSLOT >> " +
             lab.dir() / "slots" + "; while [ $(wc -l < " + lab.dir() / "slots" +
             ") -lt 4 ]; do sleep 0.05; done #{}";
  child_process run{remote(lab, with({"--slf", lab.dir() / "hosts",
                                      "--joblog", lab.dir() / "log", cmd},
                                     numbers(4))),
                    "", lab.dir().path};
  CHECK(run.exit_code(60s) == 0);
  CHECK(sorted_text(read_file(lab.dir() / "slots")) ==
        "4\nremote 1\nremote 2\nremote 3\n");
  std::multiset<std::string> hosts;
  for (auto& kvp : hosts_in(read_file(lab.dir() / "log")))
    hosts.insert(kvp.second);
  CHECK(hosts == std::multiset<std::string>{":", "good", "good", "good"});
}

TEST_CASE("a host that refuses the key and one with a wrong host key are "
          "named and left out - the good host runs everything" *
          doctest::timeout(120)) {
  sshd_lab lab;
  child_process run{remote(lab, with({"-S", "good,refuser", "-S", "impostor",
                                      "-j", "2", "echo", "{}"},
                                     numbers(6))),
                    "", lab.dir().path};
  CHECK(run.exit_code(60s) == 0);
  CHECK(sorted_text(run.out()) == "1\n2\n3\n4\n5\n6\n");
  CHECK(run.err().find("host refuser cannot be used") != std::string::npos);
  CHECK(run.err().find("Permission denied (publickey)") != std::string::npos);
  CHECK(run.err().find("host impostor cannot be used") != std::string::npos);
  CHECK(run.err().find("Host key verification failed") != std::string::npos);
  CHECK(run.err().find("differs from the one in known_hosts") !=
        std::string::npos);
  // With no usable host at all: poolrun's own error, nothing run.
  child_process none{remote(lab, {"-S", "refuser,impostor", "touch", "ran",
                                  ":::", "x"}),
                     "", lab.dir().path};
  CHECK(none.exit_code(60s) == 255);
  CHECK(none.err().find("no host can run commands") != std::string::npos);
  CHECK(::access((lab.dir() / "ran").c_str(), F_OK) != 0);
}

TEST_CASE("a host that dies mid-run: its commands run again on the other "
          "host - and all succeed" *
          doctest::timeout(120)) {
  sshd_lab lab;
  auto starts = lab.dir() / "starts";
  auto dying_port = std::to_string(lab.port("dying"));
  // Each command notes the server port it runs behind, then takes 1 s.
  auto cmd = "echo {} ${SSH_CONNECTION##* } >> " + starts +
             "; sleep 1; echo {} done";
  child_process run{remote(lab, with({"-S", "2/good,2/dying", "--joblog",
                                      lab.dir() / "log", cmd},
                                     numbers(10))),
                    "", lab.dir().path};
  // Once two commands run on `dying`, it dies with them.
  auto on_dying = [&] {
    size_t n = 0;
    for (auto& line : lines_of(read_file(starts)))
      n += line.size() > dying_port.size() &&
           line.compare(line.size() - dying_port.size(), dying_port.size(),
                        dying_port) == 0;
    return n;
  };
  for (int i = 0; i < 3000 && on_dying() < 2; ++i)
    std::this_thread::sleep_for(10ms); // polling a file commands write
  REQUIRE(on_dying() >= 2);
  lab.kill_host("dying");
  CHECK(run.exit_code(60s) == 0);
  std::string expected;
  for (int i = 1; i <= 10; ++i)
    expected += std::to_string(i) + " done\n";
  CHECK(sorted_text(run.out()) == sorted_text(expected));
  CHECK(run.err().find("host dying lost") != std::string::npos);
  // Those that were on `dying` when it died finished on `good`.
  auto hosts = hosts_in(read_file(lab.dir() / "log"));
  CHECK(hosts.size() == 10);
  size_t started_twice = 0;
  auto all = lines_of(read_file(starts));
  for (int i = 1; i <= 10; ++i) {
    size_t n = 0;
    for (auto& line : all)
      n += line.rfind(std::to_string(i) + " ", 0) == 0;
    if (n > 1) {
      ++started_twice;
      CHECK(hosts[std::to_string(i)] == "good");
    }
  }
  CHECK(started_twice >= 2);
}

TEST_CASE("--timeout kills the remote command's process group" *
          doctest::timeout(120)) {
  sshd_lab lab;
  auto gc = lab.dir() / "grandchild";
  child_process run{remote(lab, {"-S", "1/good", "--timeout", "0.5",
                                 "--joblog", lab.dir() / "log",
                                 "sleep 30 & echo $! > " + gc + "; sleep 30",
                                 ":::", "x"}),
                    "", lab.dir().path};
  // It would take 30 s: ending within the wait is the kill's doing.
  CHECK(run.exit_code(20s) == 1);
  auto pid = static_cast<pid_t>(std::stol(read_file(gc)));
  for (int i = 0; i < 100 && !process_gone(pid); ++i)
    std::this_thread::sleep_for(20ms);
  CHECK(process_gone(pid));
  CHECK(read_file(lab.dir() / "log").find("\tgood\t") != std::string::npos);
}

TEST_CASE("--retries retries on another host than the one that failed" *
          doctest::timeout(120)) {
  sshd_lab lab;
  auto dying_port = std::to_string(lab.port("dying"));
  // Fails behind `dying`, succeeds behind `good`.
  auto cmd = "[ ${SSH_CONNECTION##* } != " + dying_port + " ] && echo {} ok";
  child_process run{remote(lab, with({"-S", "1/good,1/dying", "--retries", "2",
                                      "--retry-delay", "10ms", cmd},
                                     numbers(6))),
                    "", lab.dir().path};
  CHECK(run.exit_code(60s) == 0);
  CHECK(sorted_text(run.out()) == "1 ok\n2 ok\n3 ok\n4 ok\n5 ok\n6 ok\n");
}

TEST_CASE("--transferfile - --return and --cleanup over the connection" *
          doctest::timeout(120)) {
  sshd_lab lab;
  write_file(lab.dir() / "in1", "hello\n");
  write_file(lab.dir() / "in2", "hello world\n");
  child_process run{remote(lab, {"-S", "1/good", "--trc", "{}.out",
                                 "wc -c < {} > {}.out", ":::", "in1", "in2"}),
                    "", lab.dir().path};
  CHECK(run.exit_code(60s) == 0);
  CHECK(read_file(lab.dir() / "in1.out") == "6\n");
  CHECK(read_file(lab.dir() / "in2.out") == "12\n");
  // Cleaned up on the host: neither the inputs nor the outputs are left.
  child_process look{{"ssh", "-F", lab.dir() / "ssh_config", "good",
                      "ls in1 in1.out in2 in2.out 2>/dev/null | wc -l"}};
  CHECK(look.exit_code(30s) == 0);
  CHECK(look.out() == "0\n");
}

TEST_CASE("a journal works across hosts: a rerun runs nothing again" *
          doctest::timeout(120)) {
  sshd_lab lab;
  auto runs = lab.dir() / "runs";
  auto args = remote(lab, with({"-S", "1/good,1/dying", "--journal",
                                lab.dir() / "j.db",
                                "echo {} >> " + runs + "; echo {}"},
                               numbers(5)));
  child_process first{args, "", lab.dir().path};
  CHECK(first.exit_code(60s) == 0);
  CHECK(lines_of(read_file(runs)).size() == 5);
  child_process second{args, "", lab.dir().path};
  CHECK(second.exit_code(60s) == 0);
  CHECK(second.out().empty());
  CHECK(lines_of(read_file(runs)).size() == 5);
}
