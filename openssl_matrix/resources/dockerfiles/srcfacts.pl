#!/usr/bin/perl
# openssl-matrix: facts about an unpacked OpenSSL source tree, read before it is built,
# and the build steps those facts decide.
#
#   perl srcfacts.pl check --facts FILE [--target T]... [--unified-only OPTION]... \
#        [--optional OPTION]... [--require OPTION]...
#     Run in the tree at the end of the source stage. Finds what the recipe depends on
#     and records it in FILE (key=value lines), failing with a message that says what
#     to do when the tree cannot be built:
#     - the build system: "legacy" (Makefile.org: `make depend`, then make -j1) or
#       "unified" (build.info and Configurations/: make -jN);
#     - the Configure target: the first --target this tree's Configure defines (the
#       recipe lists them in order of preference: linux-x86, then linux-elf for i386);
#     - each --unified-only option (e.g. --libdir=lib) is kept on unified trees only;
#     - each --optional option is kept only if this release's Configure knows it (e.g.
#       `no-tests`, which early 1.1.0 releases refuse with "Unsupported options");
#     - each --require option (an engine switch, an option the matrix gives) must be
#       known, or the check stops here with a message naming it.
#
#   perl srcfacts.pl configure --facts FILE -- perl ./Configure @target@ ARGS...
#     Runs the Configure command with @target@ replaced by the target FILE records and
#     without the options FILE says to drop, saying so, and records the line it ran in
#     FILE's folder as configure-line.txt.
#
#   perl srcfacts.pl make --facts FILE
#     Builds as the tree's build system wants: legacy: `make depend`, then `make -j1`;
#     unified: `make -j$MAKE_JOBS` (the build argument; 1 if unset).
#
#   perl srcfacts.pl knows OPTION
#     Prints "yes" or "no": whether ./Configure knows OPTION (for tests and by hand).
#
# Plain perl 5.8 (no modules beyond strict/warnings): it runs on every era's toolchain.
use strict;
use warnings;

sub slurp {
    my ($path) = @_;
    open(my $fh, '<', $path) or return undef;
    local $/;
    my $text = <$fh>;
    close($fh);
    return $text;
}

sub fail {
    print STDERR "openssl-matrix: ", @_, "\n";
    exit 1;
}

# The build system: "legacy" (0.9.8-1.0.2: Makefile.org, `make depend`, not parallel-safe)
# or "unified" (1.1.0 on: build.info files and Configurations/*.tmpl).
sub build_system {
    return "legacy" if -f "Makefile.org";
    return "unified" if -f "build.info" && -d "Configurations";
    return "unknown";
}

# How many quilt patches a tree says are applied to it (.pc/applied-patches, left by
# `quilt push` in a distribution's source package: seen in a Debian-patched 1.0.1k copy,
# whose backports left ssl/s2_srvr.c without a closing brace). 0: a plain tree.
sub applied_patches {
    my $list = slurp(".pc/applied-patches");
    return 0 unless defined $list;
    my @names = grep { /\S/ } split(/\n/, $list);
    return scalar(@names);
}

# Whether ./Configure (or Configurations/*.conf) defines a target.
sub has_target {
    my ($target) = @_;
    my $configure = slurp("Configure");
    return 0 unless defined $configure;
    # legacy: the %table lines in Configure itself:  "linux-elf",	"gcc:...
    return 1 if $configure =~ /^\s*"\Q$target\E"\s*(,|=>)/m;
    # unified: Configurations/*.conf:  "linux-x86" => {
    if (opendir(my $dh, "Configurations")) {
        foreach my $f (sort grep { /\.conf$/ } readdir($dh)) {
            my $text = slurp("Configurations/$f");
            return 1 if defined $text && $text =~ /^\s*"\Q$target\E"\s*=>/m;
        }
        closedir($dh);
    }
    return 0;
}

# The quoted entries of a `my @NAME = ( ... );` or `my %NAME = ( ... );` list in Configure.
sub configure_list {
    my ($configure, $sigil, $name) = @_;
    return undef unless $configure =~ /^my \Q$sigil$name\E\s*=\s*\((.*?)^\s*\);/ms;
    my $body = $1;
    $body =~ s/#[^\n]*//g;
    # a hash's keys only ("hw-padlock" => "padlockeng": the old name is the known one)
    my @entries = $sigil eq '%' ? ($body =~ /"([^"]*)"\s*=>/g) : ($body =~ /"([^"]*)"/g);
    return \@entries;
}

# Whether this release's Configure accepts an option.
sub knows {
    my ($option) = @_;
    my $configure = slurp("Configure");
    fail("no ./Configure in ", `pwd`) unless defined $configure;
    if ($option =~ /^(?:no|disable|enable)-(.+)$/) {
        my $word = $1;
        my $list = configure_list($configure, '@', 'disablables');
        # 0.9.8-1.0.2 keep no list: their Configure takes any no-/enable- word.
        return 1 unless defined $list;
        foreach my $entry (@$list) {
            return 1 if $word =~ /^(?:$entry)$/;
        }
        my $deprecated = configure_list($configure, '%', 'deprecated_disablables');
        if (defined $deprecated) {
            foreach my $entry (@$deprecated) {
                return 1 if $word eq $entry;
            }
        }
        return 0;
    }
    if ($option =~ /^(--[a-z-]+=)/) {
        my $key = $1;
        return $configure =~ /\Q$key\E/ ? 1 : 0;
    }
    return 1;    # compiler flags and the like go through as they are
}

#: The argument of the Configure command that stands for the target the check chose.
my $TARGET_TOKEN = '@target@';

sub check {
    my @args = @_;
    my $facts;
    my (@targets, @unified_only, @optional, @required);
    while (@args) {
        my $a = shift @args;
        if ($a eq '--facts') { $facts = shift @args; }
        elsif ($a eq '--target') { push(@targets, shift @args); }
        elsif ($a eq '--unified-only') { push(@unified_only, shift @args); }
        elsif ($a eq '--optional') { push(@optional, shift @args); }
        elsif ($a eq '--require') { push(@required, shift @args); }
        else { fail("srcfacts.pl check: unknown argument $a"); }
    }
    fail("srcfacts.pl check: --facts FILE is required") unless defined $facts;
    my @out;
    my $quilted = applied_patches();
    if ($quilted) {
        fail("this tree has $quilted quilt patch(es) applied (.pc/applied-patches: a "
             . "distribution's source package as patched, e.g. Debian's): it is not the "
             . "release its name says. Build the release tarball, or undo them "
             . "(`quilt pop -a`) and leave .pc/ and debian/ out; to build the patched tree "
             . "as it is, leave .pc/ out of the tarball");
    }
    my $system = build_system();
    if ($system eq 'unknown') {
        fail("this tree has neither Makefile.org (the legacy build system, 0.9.8-1.0.2) "
             . "nor build.info and Configurations/ (the unified one, 1.1.0 on): is it an "
             . "OpenSSL release tree? Check that the tarball has one top folder with "
             . "Configure in it");
    }
    push(@out, "build_system=$system");
    if (@targets) {
        my ($chosen) = grep { has_target($_) } @targets;
        if (!defined $chosen) {
            fail("this source's Configure has none of the targets "
                 . join(", ", map { "'$_'" } @targets)
                 . ": is the tree the release its name says? (linux-x86 exists from "
                 . "1.1.0, linux-elf in every release)");
        }
        push(@out, "target=$chosen");
    }
    foreach my $option (@required) {
        if (!knows($option)) {
            fail("this release's Configure does not know '$option' (Configure would stop "
                 . "with \"Unsupported options\"): leave it out of the matrix for this "
                 . "version (its configure list or engines)");
        }
        push(@out, "option.$option=known");
    }
    my (@drop, @why);
    my %unified_only = map { $_ => 1 } @unified_only;
    foreach my $option (@unified_only) {
        next if $system eq 'unified';
        push(@out, "option.$option=unified-only");
        push(@drop, $option);
        push(@why, "'$option' is for the unified build system; this tree has the legacy one");
    }
    foreach my $option (@optional) {
        next if $unified_only{$option} && $system ne 'unified';
        my $known = knows($option);
        push(@out, "option.$option=" . ($known ? "known" : "unknown"));
        next if $known;
        push(@drop, $option);
        push(@why, "this release's Configure does not know '$option'");
    }
    push(@out, "drop=" . join(",", @drop));
    open(my $fh, '>', $facts) or fail("cannot write $facts: $!");
    print $fh map { "$_\n" } @out;
    close($fh);
    print "openssl-matrix source facts: ", join("; ", @out), "\n";
    print "openssl-matrix note: $_: it will be left out\n" foreach @why;
    return 0;
}

# The facts file's key=value lines.
sub read_facts {
    my ($facts) = @_;
    my $text = slurp($facts);
    fail("no source facts in $facts: the source stage did not run its check") unless defined $text;
    my %facts = map { /^([^=]+)=(.*)$/ ? ($1 => $2) : () } split(/\n/, $text);
    return \%facts;
}

sub configure {
    my @args = @_;
    my $facts;
    while (@args && $args[0] ne '--') {
        my $a = shift @args;
        if ($a eq '--facts') { $facts = shift @args; }
        else { fail("srcfacts.pl configure: unknown argument $a"); }
    }
    shift @args;
    fail("srcfacts.pl configure: --facts FILE -- COMMAND...") unless defined $facts && @args;
    my $found = read_facts($facts);
    my %drop = map { $_ => 1 } grep { length } split(/,/, defined $found->{drop} ? $found->{drop} : '');
    my @command;
    foreach my $a (@args) {
        if ($a eq $TARGET_TOKEN) {
            fail("the source stage chose no Configure target (its check ran without "
                 . "--target)") unless defined $found->{target};
            push(@command, $found->{target});
            next;
        }
        if ($drop{$a}) {
            print "openssl-matrix note: leaving out '$a' (see the source facts)\n";
            next;
        }
        push(@command, $a);
    }
    (my $dir = $facts) =~ s{/[^/]*$}{};
    $dir = "." if $dir eq $facts;
    if (open(my $fh, '>', "$dir/configure-line.txt")) {
        print $fh join(" ", @command), "\n";
        close($fh);
    }
    print "openssl-matrix runs: ", join(" ", @command), "\n";
    exec { $command[0] } @command or fail("cannot run $command[0]: $!");
}

sub run_make {
    my @args = @_;
    my $facts;
    while (@args) {
        my $a = shift @args;
        if ($a eq '--facts') { $facts = shift @args; }
        else { fail("srcfacts.pl make: unknown argument $a"); }
    }
    fail("srcfacts.pl make: --facts FILE is required") unless defined $facts;
    my $system = read_facts($facts)->{build_system};
    $system = '' unless defined $system;
    if ($system eq 'legacy') {
        # Makefile.org trees: dependencies first, and one job (their makefiles are not
        # parallel-safe; distributions build them with -j1)
        print "openssl-matrix runs: make depend, then make -j1 (legacy build system: Makefile.org)\n";
        system("make", "depend") == 0 or fail("make depend failed (exit " . ($? >> 8) . ")");
        exec { "make" } "make", "-j1" or fail("cannot run make: $!");
    }
    fail("srcfacts.pl make: no build system in $facts") unless $system eq 'unified';
    my $jobs = $ENV{MAKE_JOBS};
    $jobs = 1 unless defined $jobs && $jobs =~ /^[1-9][0-9]*$/;
    print "openssl-matrix runs: make -j$jobs (unified build system: build.info)\n";
    exec { "make" } "make", "-j$jobs" or fail("cannot run make: $!");
}

my $mode = shift @ARGV || '';
if ($mode eq 'check') { exit check(@ARGV); }
if ($mode eq 'configure') { configure(@ARGV); }
if ($mode eq 'make') { run_make(@ARGV); }
if ($mode eq 'knows') {
    my $option = shift @ARGV;
    fail("srcfacts.pl knows OPTION") unless defined $option;
    print knows($option) ? "yes\n" : "no\n";
    exit 0;
}
fail("usage: srcfacts.pl check|configure|make|knows ...");
