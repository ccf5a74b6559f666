# Read by CTest (not CMake) after the discovered tests: the longest tests
# start first. A fresh clone's run has no timings of an earlier run
# (Testing/Temporary/CTestCostData.txt) and CTest would start tests in the
# order they were added, the CLI's long real-server tests last, with the
# other core idle while the last of them runs. Each COST is that test's
# seconds in a release run with -j2 on the 2-core dev machine (junit.xml of
# `ctest --preset release -j2`), used only to order the start; the timings
# CTest records itself replace them from the second run on. A name that is
# not a test of this build is ignored.
set(backendlab_first_tests
  "cli.PgWhatIfTest.NineMajorsInOneRunAndTheServersOwnClockOn18" 82
  "cli.PgCliTest.ProfileViewsOfTwoServersAreReadBackByPprofAndChromium" 46
  "cli.PgPathsTest.PrecisionEndsTheRoundsOnceEveryRatioHoldsIt" 36
  "waits.LatchTest.NoLostWakeupOverManyCycles<LatchTest/selfpipe_poll.  # TypeParam = backendlab::waits::SelfpipePollLatch>" 36
  "waits.LatchTest.NoLostWakeupOverManyCycles<LatchTest/selfpipe_select.  # TypeParam = backendlab::waits::SelfpipeSelectLatch>" 36
  "cli.CalibrateServerTest.TinyFitWritesAProfileACycleRunsWith" 28
  "waits.LatchTest.NoLostWakeupOverManyCycles<LatchTest/signalfd_epoll.  # TypeParam = backendlab::waits::SignalfdEpollLatch>" 28
  "waits.LatchTest.NoLostWakeupOverManyCycles<LatchTest/eventfd_epoll.  # TypeParam = backendlab::waits::EventfdEpollLatch>" 26
  "lifecycle.CycleTest.CountsSurviveAMillionPinsInEveryServerMode" 22
  "waits.LatchTest.NoLostWakeupOverManyCycles<LatchTest/futex.  # TypeParam = backendlab::waits::FutexLatch>" 19
  "waits.LatchTest.NoLostWakeupOverManyCycles<LatchTest/semaphore.  # TypeParam = backendlab::waits::SemaphoreLatch>" 19
  "cli.ViewsTest.HtmlPageOfAProfileAgainstItsBaselineSearchesItsFlameGraphs" 18
  "cli.Signals/ProfileKillTest.DuringPerfLeavesNothingBehind/TermToTheGroup  # GetParam() = SIGTERM to the group" 17
  "cli.Signals/ProfileKillTest.DuringPerfLeavesNothingBehind/TermToTheTool  # GetParam() = SIGTERM to the tool alone" 16
  "cli.ViewsTest.HtmlPageOfCompareRendersItsTableFlameGraphsAndTimelineInChromium" 16
  "cli.PgManyTest.InterruptWhileHundredsAreHeldLeavesNothing" 16
  "cli.Signals/ProfileKillTest.DuringPerfLeavesNothingBehind/KillToTheTool  # GetParam() = SIGKILL to the tool alone" 15
  "cli.ViewsTest.ProfileSpeedscopeAndTraceExportsAreReadBySpeedscope" 15)
while(backendlab_first_tests)
  list(POP_FRONT backendlab_first_tests name cost)
  set_tests_properties("${name}" PROPERTIES COST ${cost})
endwhile()
