// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package distribution is the language of assumed delay distributions: the
// DIST of `deltaq eval --outcome NAME=DIST`, the ΔQ a designer assumes for an
// outcome before the system exists (design-time ΔQSD).
//
// Grammar (spaces and tabs may separate tokens, not a number from its unit):
//
//	dist     = "point" "(" duration ")"                  always exactly D
//	         | "uniform" "(" duration "," duration ")"   uniform on [LO, HI), LO ≤ HI
//	         | "exp" "(" duration ")"                    exponential, mean above 0
//	         | "never"                                   never completes (all failure)
//	         | "steps" "(" step { "," step } ")"         step CDF
//	         | "choice" "(" branch { "," branch } ")" .  mixture, weights sum to 1
//	step     = duration ":" prob .                       CDF reaches prob at duration
//	branch   = prob ":" dist .                           dist with probability prob
//	duration = number [ unit ] .                        the unit only if number is 0
//	unit     = "ns" | "us" | "µs" | "ms" | "s" .
//	prob     = number .                                  at most 1
//	number   = digits and dots, unsigned, e.g. 2.5 .
//
// choice nests at most 32 levels deep. Parse returns a Dist; its Build makes
// the ΔQ on a given binning (with the constructors of package deltaq), and its
// Horizon, the largest delay it names, gives DefaultDMax the dMax that fits a
// set of distributions. Errors name the line and column of the text
// (package textpos).
package distribution
