// The joblog: GNU parallel's columns out, resume states back in.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "joblog.hpp"

using namespace poolrun;

namespace {

std::string temp_path() {
  char tmpl[] = "/tmp/poolrun-joblog-XXXXXX";
  auto fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  ::close(fd);
  return tmpl;
}

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

} // namespace

TEST_CASE("a line per job in GNU parallel's format - appending keeps one "
          "header" *
          doctest::timeout(10)) {
  auto path = temp_path();
  job_result res;
  res.host = "h1";
  res.started_at = 1700000000123000000;
  res.runtime = 1500000000;
  res.sent = 3;
  res.received = 14;
  res.exit_code = 2;
  res.command = "echo x";
  {
    joblog_writer log;
    REQUIRE(log.open(path, false).empty());
    log.write(7, res);
  }
  {
    joblog_writer log;
    REQUIRE(log.open(path, true).empty());
    res.exit_code = -1;
    res.signal = 9;
    log.write(8, res);
  }
  CHECK(slurp(path) ==
        "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\t"
        "Command\n"
        "7\th1\t1700000000.123\t     1.500\t3\t14\t2\t0\techo x\n"
        "8\th1\t1700000000.123\t     1.500\t3\t14\t-1\t9\techo x\n");
  std::remove(path.c_str());
}

TEST_CASE("reading back: the last line of a Seq wins - unknown Seqs are "
          "unknown - a missing file is empty" *
          doctest::timeout(10)) {
  auto path = temp_path();
  {
    std::ofstream out{path};
    out << "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal"
           "\tCommand\n"
        << "1\t:\t1.0\t0.1\t0\t2\t0\t0\techo 1\n"
        << "2\t:\t1.0\t0.1\t0\t2\t1\t0\techo 2\n"
        << "3\t:\t1.0\t0.1\t0\t2\t0\t15\techo a\nmore of it\n"
        << "2\t:\t1.0\t0.1\t0\t2\t0\t0\techo 2\n";
  }
  joblog_record rec;
  REQUIRE(rec.read(path).empty());
  CHECK(rec.of(1) == joblog_record::succeeded);
  CHECK(rec.of(2) == joblog_record::succeeded);
  CHECK(rec.of(3) == joblog_record::failed);
  CHECK(rec.of(4) == joblog_record::unknown);
  joblog_record none;
  CHECK(none.read("/nonexistent-joblog").empty());
  CHECK(none.of(1) == joblog_record::unknown);
  std::remove(path.c_str());
}
