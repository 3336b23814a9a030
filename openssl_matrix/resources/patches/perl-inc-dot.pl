#!/usr/bin/perl
# openssl-matrix compat fix (our own): perl 5.26 removed "." from @INC. Old releases run
# their assembler generators from the generator's own folder (0.9.8's Makefiles:
# `cd asm; perl des-586.pl ...`) and let them `require` a helper that sits beside them
# (des-586.pl: "desboth.pl"), relying on ".". A script whose `push(@INC, ...)` list is
# made of plain strings without "." and which requires a file of its own folder gets "."
# put first in that list. Rewrites every such perl file of the tree; prints "FILE: N"
# per file changed; changes nothing in a tree without the construct (later releases push
# the script's own folder, "${dir}").
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Find;

my @files;
find({ no_chdir => 1, wanted => sub {
    push(@files, $_) if -f $_ && /\.pl$/;
} }, '.');

my $string = qr{"[^"\$\@\\]*"|'[^'\\]*'};
foreach my $file (sort @files) {
    open(my $in, '<', $file) or die "cannot read $file: $!\n";
    my $text = do { local $/; <$in> };
    close($in);
    my $dir = dirname($file);
    # a helper it requires that lies in its own folder (not found through perlasm)
    my @own = grep { -f "$dir/$_" } ($text =~ m{^\s*require\s*["']([^"'\$/\\]+)["']}mg);
    next unless @own;
    my $n = 0;
    $text =~ s{^(\s*push\s*\(\s*\@INC\s*,\s*)((?:$string)(?:\s*,\s*(?:$string))*)(\s*\)\s*;)}{
        my ($head, $list, $tail) = ($1, $2, $3);
        if ($list =~ m{(?:^|,)\s*["']\.["']\s*(?:,|$)}) { "$head$list$tail" }
        else { $n++; "$head\".\",$list$tail" }
    }mge;
    next unless $n;
    open(my $out, '>', $file) or die "cannot write $file: $!\n";
    print $out $text;
    close($out) or die "cannot write $file: $!\n";
    (my $name = $file) =~ s{^\./}{};
    print "$name: $n\n";
}
