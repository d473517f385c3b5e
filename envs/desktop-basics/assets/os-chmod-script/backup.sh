#!/bin/sh
# Copy the documents folder into a dated backup folder.
dest="$HOME/backups/$(date +%Y-%m-%d)"
mkdir -p "$dest"
cp -r "$HOME/Documents" "$dest/"
