// The perl co-process behind {= perl =}, --rpl and --plus.
#include "perl_expr.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace poolrun {

namespace {

// The interpreter's side. Requests come on fd 3, replies go to fd 4:
//   C LEN\n EXPR          -> OK\n | ER LEN\n MESSAGE
//   A N\n (LEN\n BYTES)*N -> (no reply) sets @arg
//   T N\n                 -> (no reply) sets total_jobs()
//   E ID SEQ LEN\n ARG    -> R FLAGS LEN\n VALUE  (1: uq(), 2: skip())
// Expressions are compiled in package Arg, as GNU parallel compiles them,
// so that its helper names (Q, pQ, uq, skip, seq, hash...) resolve.
constexpr const char* perl_script = R"PERL(
use strict; no warnings;
use POSIX ();
use File::Basename ();
open(my $in, '<&=', 3) or die; open(my $out, '>&=', 4) or die;
binmode $in; binmode $out; select((select($out), $| = 1)[0]);
sub shell_quote_scalar {
  my $s = shift; $s = '' unless defined $s;
  return "''" if $s eq '';
  return $s unless $s =~ /[^-_.+a-z0-9\/]/i;
  $s =~ s/'/'"'"'/g; $s = "'$s'"; $s =~ s/^''//; $s =~ s/''$//;
  return $s;
}
sub Q { shell_quote_scalar($_[0]) }
sub shell_quote { wantarray ? (map { Q($_) } @_) : join(' ', map { Q($_) } @_) }
sub perl_quote_scalar { my $s = shift; $s =~ s/[\\\"\$\@]/\\$&/g if defined $s; $s }
sub pQ { perl_quote_scalar($_[0]) }
sub dirname { File::Basename::dirname($_[0]) }
sub basename { File::Basename::basename($_[0]) }
sub uniq { my %seen; grep { !$seen{$_}++ } @_ }
sub make_regexp_ungreedy {
  my ($out, $class, $escape, $quantified) = ('', 0, 0, 0);
  for my $c (split //, shift) {
    $out .= '?' if $quantified && $c ne '?';
    $quantified = 0;
    $out .= $c;
    if ($escape) { $escape = 0; next }
    if ($c eq "\\") { $escape = 1; next }
    if ($class) { $class = 0 if $c eq ']'; next }
    if ($c eq '[') { $class = 1; next }
    $quantified = 1 if $c =~ /[*+}]/;
  }
  $out .= '?' if $quantified;
  return $out;
}
package PoolrunJob;
sub seq { $_[0]{seq} }
sub slot { $ENV{PARALLEL_JOBSLOT} }
sub skip { $_[0]{skip} = 1 }
package Arg;
our (@arg, $job, $unquote, $total);
sub Q { ::Q($_[0]) }
sub pQ { ::pQ($_[0]) }
sub hash { require B; B::hash($_[0]) }
sub total_jobs { $Arg::total }
sub skip { $job->skip() }
sub slot { $job->slot() }
sub seq { $job->seq() }
sub uq { $unquote = 1 }
sub now { POSIX::strftime($_[0], localtime(time())) }
sub yyyy_mm_dd_hh_mm_ss { now("%Y-%m-%dT%H:%M:%S") }
sub yyyy_mm_dd_hh_mm { now("%Y-%m-%dT%H:%M") }
sub yyyy_mm_dd { now("%Y-%m-%d") }
sub hh_mm_ss { now("%H:%M:%S") }
sub hh_mm { now("%H:%M") }
sub yyyymmddhhmmss { now("%Y%m%d%H%M%S") }
sub yyyymmddhhmm { now("%Y%m%d%H%M") }
sub yyyymmdd { now("%Y%m%d") }
sub hhmmss { now("%H%M%S") }
sub hhmm { now("%H%M") }
package main;
my @subs;
sub bytes_of { my $n = shift; my $b = '';
  while (length($b) < $n) { read($in, $b, $n - length($b), length($b)) or exit 0 }
  $b }
sub field { my $n = <$in>; defined $n or exit 0; chomp $n; bytes_of($n) }
while (defined(my $line = <$in>)) {
  chomp $line;
  my ($verb, @n) = split / /, $line;
  if ($verb eq 'C') {
    my $expr = bytes_of($n[0]);
    my $sub = eval("package Arg; sub { no strict; no warnings; my \$job = shift; $expr\n}");
    if ($sub) { push @subs, $sub; print $out "OK\n" }
    else { my $e = "$@"; print $out "ER ", length($e), "\n", $e }
  } elsif ($verb eq 'T') {
    $Arg::total = $n[0];
  } elsif ($verb eq 'A') {
    @Arg::arg = (undef, map { field() } 1 .. $n[0]); # $arg[1]: the first
  } elsif ($verb eq 'E') {
    my $arg = bytes_of($n[2]);
    $Arg::job = bless { seq => $n[1] }, 'PoolrunJob';
    $Arg::unquote = 0;
    local $_ = $arg;
    $subs[$n[0]]->($Arg::job);
    my $v = defined $_ ? "$_" : '';
    my $flags = ($Arg::unquote ? 1 : 0) | ($Arg::job->{skip} ? 2 : 0);
    print $out "R $flags ", length($v), "\n", $v;
  }
}
)PERL";

} // namespace

const rpl_table& plus_strings() {
  // GNU parallel 20221122's --plus table (its meaning; `$$1` is the
  // string's first group).
  static const rpl_table table{
      {"{+/}", "s:/[^/]*$:: || s:.*$::"},
      {"{+.}", "s:.*\\.:: || s:.*$::"},
      {"{+..}", "s:.*\\.([^/.]*\\.[^/.]*)$:$1: || s:.*$::"},
      {"{+...}", "s:.*\\.([^/.]*\\.[^/.]*\\.[^/.]*)$:$1: || s:.*$::"},
      {"{..}", "s:\\.[^/.]*\\.[^/.]*$::"},
      {"{...}", "s:\\.[^/.]*\\.[^/.]*\\.[^/.]*$::"},
      {"{/..}", "s:.*/::; s:\\.[^/.]*\\.[^/.]*$::"},
      {"{/...}", "s:.*/::; s:\\.[^/.]*\\.[^/.]*\\.[^/.]*$::"},
      {"{choose_k}",
       "for $t (2..$#arg){ if($arg[$t-1] ge $arg[$t]) { skip() } }"},
      {"{uniq}", "if(::uniq(@arg) != @arg) { skip(); }"},
      {"{##}", "1 $_=total_jobs()"},
      {"{0#}", "1 $f=1+int((log(total_jobs())/log(10)));"
               "$_=sprintf(\"%0${f}d\",seq())"},
      {"{:-([^}]+?)}", "$_ ||= $$1"},
      {"{:(\\d+?)}", "substr($_,0,$$1) = \"\""},
      {"{:(\\d+?):(\\d+?)}", "$_ = substr($_,$$1,$$2);"},
      {"{#([^#}][^}]*?)}",
       "$nongreedy=::make_regexp_ungreedy($$1);s/^$nongreedy(.*)/$1/;"},
      {"{##([^#}][^}]*?)}", "s/^$$1//;"},
      {"{%([^}]+?)}",
       "$nongreedy=::make_regexp_ungreedy($$1);s/(.*)$nongreedy$/$1/;"},
      {"{%%([^}]+?)}", "s/$$1$//;"},
      {"{/([^#%}/]+?)/([^}]*?)}", "s/$$1/$$2/;"},
      {"{/#([^}]+?)/([^}]*?)}", "s/^$$1/$$2/g;"},
      {"{/%([^}]+?)/([^}]*?)}", "s/$$1$/$$2/g;"},
      {"{//([^}]+?)/([^}]*?)}", "s/$$1/$$2/g;"},
      {"{^([^}]+?)}", "s/^($$1)/uc($1)/e;"},
      {"{^^([^}]+?)}", "s/($$1)/uc($1)/eg;"},
      {"{,([^}]+?)}", "s/^($$1)/lc($1)/e;"},
      {"{,,([^}]+?)}", "s/($$1)/lc($1)/eg;"},
      {"{slot}", "1 $_=\"\\${PARALLEL_JOBSLOT}\";uq()"},
      {"{host}", "1 $_=\"\\${PARALLEL_SSHHOST}\";uq()"},
      {"{sshlogin}", "1 $_=\"\\${PARALLEL_SSHLOGIN}\";uq()"},
  };
  return table;
}

perl_evaluator::perl_evaluator(rpl_table rpls) : rpls_(std::move(rpls)) {}

perl_evaluator::~perl_evaluator() {
  if (to_perl_ >= 0)
    ::close(to_perl_);
  if (from_perl_ >= 0)
    ::close(from_perl_);
  if (pid_ > 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void perl_evaluator::fail(std::string why) {
  if (error_.empty())
    error_ = std::move(why);
  if (to_perl_ >= 0)
    ::close(to_perl_);
  to_perl_ = -1;
}

bool perl_evaluator::start() {
  int requests[2];
  int replies[2];
  if (::pipe2(requests, O_CLOEXEC) != 0 || ::pipe2(replies, O_CLOEXEC) != 0) {
    fail(std::string{"cannot start perl: "} + std::strerror(errno));
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, requests[0], 3);
  posix_spawn_file_actions_adddup2(&actions, replies[1], 4);
  std::string script = perl_script;
  char perl[] = "perl";
  char dash_e[] = "-e";
  char* argv[] = {perl, dash_e, script.data(), nullptr};
  auto rc = ::posix_spawnp(&pid_, "perl", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(requests[0]);
  ::close(replies[1]);
  to_perl_ = requests[1];
  from_perl_ = replies[0];
  if (rc != 0) {
    pid_ = -1;
    fail(std::string{"{= =}, --rpl and --plus need perl, which did not "
                     "start: "} +
         std::strerror(rc));
    return false;
  }
  return true;
}

bool perl_evaluator::send(const std::string& data) {
  if (to_perl_ < 0)
    return false;
  size_t done = 0;
  while (done < data.size()) {
    auto n = ::write(to_perl_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      fail("perl ended (an expression called exit or died)");
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool perl_evaluator::read_more() {
  char chunk[65536];
  for (;;) {
    auto got = ::read(from_perl_, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      fail("perl ended (an expression called exit or died)");
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(got));
    return true;
  }
}

bool perl_evaluator::read_bytes(size_t n, std::string& out) {
  while (buffer_.size() < n)
    if (!read_more())
      return false;
  out.assign(buffer_, 0, n);
  buffer_.erase(0, n);
  return true;
}

bool perl_evaluator::read_line(std::string& line) {
  size_t end;
  while ((end = buffer_.find('\n')) == std::string::npos)
    if (!read_more())
      return false;
  line.assign(buffer_, 0, end);
  buffer_.erase(0, end + 1);
  return true;
}

size_t perl_evaluator::compile(const std::string& expr) {
  // The same expression is the same function (and cached value).
  auto known = std::find(sources_.begin(), sources_.end(), expr);
  if (known != sources_.end())
    return static_cast<size_t>(known - sources_.begin());
  sources_.push_back(expr);
  wants_args_ = wants_args_ || expr.find("arg") != std::string::npos;
  wants_total_ = wants_total_ || expr.find("total_jobs") != std::string::npos;
  if (pid_ < 0 && error_.empty() && !start())
    return sources_.size() - 1;
  std::string line;
  if (!send("C " + std::to_string(expr.size()) + "\n" + expr) ||
      !read_line(line))
    return sources_.size() - 1;
  if (line.compare(0, 3, "ER ") == 0) {
    std::string why;
    read_bytes(std::stoul(line.substr(3)), why);
    while (!why.empty() && why.back() == '\n')
      why.pop_back();
    fail("cannot use the perl expression '" + expr + "': " + why);
  }
  return sources_.size() - 1;
}

void perl_evaluator::set_total(uint64_t total) {
  if (error_.empty())
    send("T " + std::to_string(total) + "\n");
}

void perl_evaluator::begin_job(uint64_t seq,
                               const std::vector<std::string>& args) {
  seq_ = seq;
  skipped_ = false;
  cache_.clear();
  if (!wants_args_ || !error_.empty())
    return;
  std::string request = "A " + std::to_string(args.size()) + "\n";
  for (auto& a : args)
    request += std::to_string(a.size()) + "\n" + a;
  send(request);
}

const perl_evaluator::value& perl_evaluator::evaluate(size_t id, size_t index,
                                                      std::string_view arg) {
  auto [it, fresh] = cache_.try_emplace({id, index});
  if (!fresh || !error_.empty())
    return it->second;
  std::string line;
  if (!send("E " + std::to_string(id) + " " + std::to_string(seq_) + " " +
            std::to_string(arg.size()) + "\n" + std::string{arg}) ||
      !read_line(line) || line.size() < 4 || line[0] != 'R')
    return it->second;
  auto flags = line[2] - '0';
  read_bytes(std::stoul(line.substr(4)), it->second.text);
  it->second.unquoted = (flags & 1) != 0;
  skipped_ = skipped_ || (flags & 2) != 0;
  return it->second;
}

} // namespace poolrun
