#!/usr/bin/perl
# openssl-matrix: facts about an unpacked OpenSSL source tree, read before it is built.
#
#   perl srcfacts.pl check --facts FILE --target T --build-system legacy|unified \
#        [--optional OPTION]... [--require OPTION]...
#     Run in the tree at the end of the source stage. Checks what the recipe relies on
#     (the Configure target exists; the build system is the one the recipe drives: the
#     legacy Makefile.org one, which wants `make depend` and -j1, or the unified
#     build.info one) and fails with a message saying what to do when it does not hold.
#     For each --optional Configure option it records whether this release's Configure
#     knows it; unknown ones are dropped by `configure` (e.g. `no-tests`, which early
#     1.1.0 releases refuse with "Unsupported options"). Each --require option (an
#     engine switch, an option the matrix gives) must be known, or the check stops here
#     with a message naming it. Writes key=value lines to FILE.
#
#   perl srcfacts.pl configure --facts FILE -- perl ./Configure ARGS...
#     Runs the Configure command without the options FILE says to drop, saying so, and
#     records the line it ran in FILE's folder as configure-line.txt.
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

sub check {
    my @args = @_;
    my ($facts, $target, $system);
    my (@optional, @required);
    while (@args) {
        my $a = shift @args;
        if ($a eq '--facts') { $facts = shift @args; }
        elsif ($a eq '--target') { $target = shift @args; }
        elsif ($a eq '--build-system') { $system = shift @args; }
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
    my $found = build_system();
    push(@out, "build_system=$found");
    if (defined $system && $found ne $system) {
        my %how = (legacy => "Makefile.org: `make depend`, then make -j1",
                   unified => "build.info: make -jN, no `make depend`");
        fail("the recipe drives the $system build system ($how{$system}) but this source "
             . "tree has the $found one"
             . ($how{$found} ? " ($how{$found})" : "")
             . ": is it the release its name says? Check crypto/opensslv.h or "
             . "include/openssl/opensslv.h");
    }
    if (defined $target) {
        if (!has_target($target)) {
            fail("this source's Configure has no target '$target': is the tree the release "
                 . "its name says? (linux-x86 exists from 1.1.0, linux-elf in every release)");
        }
        push(@out, "target.$target=yes");
    }
    foreach my $option (@required) {
        if (!knows($option)) {
            fail("this release's Configure does not know '$option' (Configure would stop "
                 . "with \"Unsupported options\"): leave it out of the matrix for this "
                 . "version (its configure list or engines)");
        }
        push(@out, "option.$option=known");
    }
    my @drop;
    foreach my $option (@optional) {
        my $known = knows($option);
        push(@out, "option.$option=" . ($known ? "known" : "unknown"));
        push(@drop, $option) unless $known;
    }
    push(@out, "drop=" . join(",", @drop));
    open(my $fh, '>', $facts) or fail("cannot write $facts: $!");
    print $fh map { "$_\n" } @out;
    close($fh);
    print "openssl-matrix source facts: ", join("; ", @out), "\n";
    foreach my $option (@drop) {
        print "openssl-matrix note: this release's Configure does not know '$option': "
            . "it will be left out\n";
    }
    return 0;
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
    my %drop;
    my $text = slurp($facts);
    fail("no source facts in $facts: the source stage did not run its check") unless defined $text;
    if ($text =~ /^drop=(.*)$/m) {
        %drop = map { $_ => 1 } grep { length } split(/,/, $1);
    }
    my @command;
    foreach my $a (@args) {
        if ($drop{$a}) {
            print "openssl-matrix note: leaving out '$a': this release's Configure does not "
                . "know it\n";
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

my $mode = shift @ARGV || '';
if ($mode eq 'check') { exit check(@ARGV); }
if ($mode eq 'configure') { configure(@ARGV); }
if ($mode eq 'knows') {
    my $option = shift @ARGV;
    fail("srcfacts.pl knows OPTION") unless defined $option;
    print knows($option) ? "yes\n" : "no\n";
    exit 0;
}
fail("usage: srcfacts.pl check|configure|knows ...");
