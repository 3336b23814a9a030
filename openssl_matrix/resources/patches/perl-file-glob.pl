#!/usr/bin/perl
# openssl-matrix compat fix (our own): perl 5.30 removed the "glob" export of File::Glob,
# so `use ... 'File::Glob' => qw/glob/` stops perl at compile time ("glob" is not
# exported by the File::Glob module). Ask for the ":bsd_glob" tag instead (perl >= 5.16),
# which makes glob() call bsd_glob(), as the old export did. Rewrites every perl file
# of the tree that has the construct; prints "FILE: N" per file changed.
use strict;
use warnings;
use File::Find;

my @files;
find({ no_chdir => 1, wanted => sub {
    return unless -f $_;
    return unless /\.(?:pl|pm|t|info|in)$/ || m{(?:^|/)Configure$};
    push(@files, $_);
} }, '.');

foreach my $file (sort @files) {
    open(my $in, '<', $file) or die "cannot read $file: $!\n";
    my $text = do { local $/; <$in> };
    close($in);
    # File::Glob ... qw/glob/  or  qw(glob)  (any qw delimiter; the only word asked for)
    my $n = ($text =~ s{(File::Glob\W{0,8}?qw\s*(\W))\s*glob\s*(\W)}{$1:bsd_glob$3}g);
    next unless $n;
    open(my $out, '>', $file) or die "cannot write $file: $!\n";
    print $out $text;
    close($out) or die "cannot write $file: $!\n";
    (my $name = $file) =~ s{^\./}{};
    print "$name: $n\n";
}
