# SPDX-License-Identifier: MIT
# `make install` (PREFIX=/usr/local, DESTDIR honoured): the binary into
# bin/, the agent into lib/gputrace/ (where agentctl_find_lib looks,
# ../lib/gputrace/ from the binary), the tools and their example output
# into share/gputrace/tools/, the man pages into share/man/man8/.
# Included by the top Makefile.

PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
AGENTDIR ?= $(PREFIX)/lib/gputrace
TOOLSDIR ?= $(PREFIX)/share/gputrace/tools
MAN8DIR  ?= $(PREFIX)/share/man/man8

# demo.gt traces build/tools/workload and stays in the source tree
INSTALL_TOOLS := $(filter-out tools/demo.gt,$(wildcard tools/*.gt)) \
		 $(wildcard tools/*_example.txt)
INSTALL_MAN8  := man/gputrace.8 $(wildcard man/man8/*.8)

install: $(BUILD)/gputrace $(filter $(AGENT_SO),$(EXTRA_ALL))
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(TOOLSDIR) $(DESTDIR)$(MAN8DIR)
	install -m 755 $(BUILD)/gputrace $(DESTDIR)$(BINDIR)/gputrace
ifneq ($(filter $(AGENT_SO),$(EXTRA_ALL)),)
	install -d $(DESTDIR)$(AGENTDIR)
	install -m 644 $(AGENT_SO) $(DESTDIR)$(AGENTDIR)/
endif
	install -m 644 $(INSTALL_TOOLS) $(DESTDIR)$(TOOLSDIR)/
	install -m 644 $(INSTALL_MAN8) $(DESTDIR)$(MAN8DIR)/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gputrace $(DESTDIR)$(AGENTDIR)/libgputrace-agent.so
	rm -f $(addprefix $(DESTDIR)$(TOOLSDIR)/,$(notdir $(INSTALL_TOOLS)))
	rm -f $(addprefix $(DESTDIR)$(MAN8DIR)/,$(notdir $(INSTALL_MAN8)))
	-rmdir $(DESTDIR)$(AGENTDIR) $(DESTDIR)$(TOOLSDIR) $(DESTDIR)$(PREFIX)/share/gputrace 2>/dev/null

.PHONY: install uninstall
