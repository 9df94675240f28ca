module github.com/gcsm/gcsm

go 1.26
