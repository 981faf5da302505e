package api

//go:generate bash gen.sh
