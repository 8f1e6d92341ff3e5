module github.com/arvenza/helix

go 1.26.8
